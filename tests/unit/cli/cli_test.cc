#include "cli/cli.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/cli_run.h"
#include "support/text.h"

namespace pipescale::cli {
namespace {

using Output = testing::CliOutput;
using testing::RunCli;

const std::string kExample = std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/fa2-gpu.yaml";

TEST(Cli, PlanJsonFollowsTheContract) {
  const Output r = RunCli({"plan", "-f", kExample, "--rate", "27", "-o", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"status", "optimizer", "objective", "solveMs", "tasks", "paths"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["optimizer"], "fa2");
  EXPECT_EQ(j["tasks"].size(), 10u);
  EXPECT_EQ(j["paths"].size(), 6u);
  int replicas = 0;
  for (const auto& t : j["tasks"]) replicas += t["replicas"].get<int>();
  EXPECT_EQ(j["objective"].get<int>(), replicas);
  for (const auto& p : j["paths"]) {
    EXPECT_LE(p["predictedLatencyMs"].get<double>(), p["sloMs"].get<double>());
  }
}

TEST(Cli, EveryOptimizerAndPathRates) {
  for (const char* o : {"fa2", "ds2", "inferline", "grandslam", "exact"}) {
    const Output r = RunCli({"plan", "-f", kExample, "--optimizer", o, "--path-rate", "car-qa=10",
                             "--path-rate=text-qa=3", "-o", "json"});
    ASSERT_EQ(r.code, kExitOk) << o << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["optimizer"], o);
  }
}

// The example declares spec.minRate 8: a lighter what-if is planned as the operator would plan
// it, for the floor, and the table says so; a heavier one as given.
TEST(Cli, ALoadBelowTheMinimumRateIsPlannedAtTheMinimum) {
  const Output floor = RunCli({"plan", "-f", kExample, "--rate", "8", "-o", "json"});
  const Output light = RunCli({"plan", "-f", kExample, "--rate", "2", "-o", "json"});
  const Output heavy = RunCli({"plan", "-f", kExample, "--rate", "16", "-o", "json"});
  ASSERT_EQ(light.code, kExitOk) << light.err;
  const auto f = nlohmann::json::parse(floor.out), l = nlohmann::json::parse(light.out),
             h = nlohmann::json::parse(heavy.out);
  EXPECT_EQ(l["tasks"], f["tasks"]);
  EXPECT_GT(h["objective"].get<int>(), f["objective"].get<int>());
  EXPECT_NE(l["notes"].dump().find("spec.minRate 8"), std::string::npos) << l["notes"];
  EXPECT_EQ(h["notes"].dump().find("spec.minRate"), std::string::npos) << h["notes"];
  const Output table = RunCli({"plan", "-f", kExample, "--rate", "2"});
  EXPECT_NE(table.out.find("note: planned for spec.minRate 8 requests/s"), std::string::npos);
}

// The tail model plans for the p99 of random arrivals: never fewer replicas than the papers'
// mean-value model at the same rate, and each path's prediction is what the model says.
TEST(Cli, TheLatencyModelFlagOverridesTheSpec) {
  for (const char* rate : {"4", "8", "16"}) {
    const Output tail = RunCli({"plan", "-f", kExample, "--rate", rate, "-o", "json"});
    const Output mean =
        RunCli({"plan", "-f", kExample, "--rate", rate, "--latency-model", "mean", "-o", "json"});
    ASSERT_EQ(tail.code, kExitOk) << tail.err;
    ASSERT_EQ(mean.code, kExitOk) << mean.err;
    const auto t = nlohmann::json::parse(tail.out), m = nlohmann::json::parse(mean.out);
    EXPECT_GE(t["objective"].get<int>(), m["objective"].get<int>()) << rate;
    EXPECT_NE(t, m) << rate;
  }
  const Output bad = RunCli({"plan", "-f", kExample, "--rate", "8", "--latency-model", "p99"});
  EXPECT_EQ(bad.code, kExitInvalidInput);
  EXPECT_NE(bad.err.find("--latency-model must be tail or mean"), std::string::npos) << bad.err;
}

TEST(Cli, BadFlagsExitTwo) {
  EXPECT_EQ(RunCli({"plan", "-f", kExample, "--optimizer", "gurobi", "--rate", "1"}).code,
            kExitInvalidInput);
  EXPECT_EQ(RunCli({"plan", "-f", kExample}).code, kExitInvalidInput);  // no load
  EXPECT_EQ(RunCli({"plan", "-f", kExample, "--rate", "fast"}).code, kExitInvalidInput);
  const Output unknown_path = RunCli({"plan", "-f", kExample, "--path-rate", "nope=3"});
  EXPECT_EQ(unknown_path.code, kExitInvalidInput);
  EXPECT_NE(unknown_path.err.find("unknown path \"nope\""), std::string::npos);
  EXPECT_EQ(RunCli({"frobnicate"}).code, kExitInvalidInput);
}

// What would run for days or wrap around is refused before anything runs, naming the flag.
TEST(Cli, SimulateRefusesSeedsOutOfRangeAndRunsTooLongOrLarge) {
  const auto simulate = [](std::vector<std::string> more) {
    std::vector<std::string> args = {"simulate", "-f",         kExample, "--policy",
                                     "fixed:1",  "--progress", "none"};
    args.insert(args.end(), more.begin(), more.end());
    return RunCli(args);
  };
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--trace", "10:5", "--seed", "-1"}, "--seed: needs an integer in [0, 4294967295]"},
      {{"--trace", "10:5", "--seed", "4294967296"}, "--seed: needs an integer"},
      {{"--trace", "10:5", "--seed", "12x"}, "--seed: needs an integer"},
      {{"--trace", "10:1e15"}, "lasts longer than 31 days"},
      {{"--trace", "normal:10:1:1e15"}, "lasts longer than 31 days"},
      {{"--trace", "1e12:10"}, "asks for more than 1000000/s"},
      {{"--trace", "10:5", "--duration", "800h"}, "at most 31 days"},
      {{"--trace", "10:5", "--duration", "0x10s"}, "--duration must be a duration"},
      {{"--trace", "10:5", "--duration", " 90s"}, "--duration must be a duration"},
      {{"--trace", "10:5", "--duration", "90ms"}, "--duration must be a duration"},
      {{"--trace", "10:5", "--duration", "0"}, "--duration must be a duration"},
      {{"--trace", "1000000:10000"}, "a run simulates at most 1e+09"},
      {{"--trace", "10:5", "--scale", "0"}, "--scale: needs a number in"},
      {{"--trace", "600000:5", "--scale", "2"}, "--scale: scaled, the trace asks for 1.2e+06"},
      {{"--trace", "10:5", "--tune", "1.5"}, "--tune: needs a number in"},
  };
  for (const auto& [args, message] : cases) {
    const Output r = simulate(args);
    EXPECT_EQ(r.code, kExitInvalidInput) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  EXPECT_EQ(simulate({"--trace", "10:5", "--seed", "4294967295"}).code, kExitOk);
}

// Several -f run together on --nodes: a table per pipeline and the totals; flags that do not
// pair with the pipelines are refused, naming them.
TEST(Cli, SimulateRunsSeveralPipelinesTogether) {
  const std::string root = PIPESCALE_SOURCE_DIR;
  const std::vector<std::string> both = {"simulate",
                                         "--progress",
                                         "none",
                                         "--nodes",
                                         root + "/bench/tenancy/nodes.yaml",
                                         "-f",
                                         root + "/bench/tenancy/code.yaml",
                                         "-f",
                                         root + "/bench/tenancy/chat.yaml"};
  const auto run = [&](std::vector<std::string> more) {
    std::vector<std::string> args = both;
    args.insert(args.end(), more.begin(), more.end());
    return RunCli(args);
  };
  const Output ok = run({"--trace", "20:60", "--trace", "5:60", "--scale", "2"});
  ASSERT_EQ(ok.code, kExitOk) << ok.err;
  EXPECT_NE(ok.out.find("pipeline code, trace 20:60"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("pipeline chat, trace 5:60"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("all 2 pipelines together"), std::string::npos) << ok.out;
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--trace", "1:5", "--trace", "1:5", "--trace", "1:5"}, "one --trace for every pipeline"},
      {{"--trace", "1:5", "--scale", "1", "--scale", "2", "--scale", "3"},
       "one --scale for every pipeline"},
      {{"--trace", "1:5", "--policy", "fa2"}, "--policy is shared, first-come or both"},
      {{"--trace", "1:5", "--tune", "0.99"}, "--tune takes one pipeline"},
      {{"--trace", "1:5", "--plot", "x.svg"}, "--plot draws one pipeline"},
  };
  for (const auto& [args, message] : cases) {
    const Output r = run(args);
    EXPECT_EQ(r.code, kExitInvalidInput) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
}

TEST(Cli, InvalidPipelineExitsTwoWithFieldErrors) {
  std::ifstream in(kExample);
  std::stringstream text;
  text << in.rdbuf();
  const std::string broken =
      testing::ReplaceFirst(text.str(), "next: [{task: quan}]", "next: [{task: qaun}]");
  const std::string file = ::testing::TempDir() + "/broken.yaml";
  std::ofstream(file) << broken;
  for (const char* command : {"plan", "validate"}) {
    const Output r = RunCli({command, "-f", file, "--rate", "5"});
    EXPECT_EQ(r.code, kExitInvalidInput) << command;
    EXPECT_NE(r.err.find("spec.tasks[3].next[0].task: unknown task \"qaun\""), std::string::npos)
        << r.err;
    EXPECT_TRUE(r.out.empty());
  }
}

// A pod template the operator could not build a Deployment from is an invalid spec, named.
TEST(Cli, ValidateNamesAPodTemplateOfTheWrongShape) {
  std::ifstream in(kExample);
  std::stringstream text;
  text << in.rdbuf();
  std::string broken = text.str();
  const std::string variant = "        - name: default\n";
  broken.insert(broken.find(variant) + variant.size(), "          template: {spec: 1}\n");
  const std::string file = ::testing::TempDir() + "/bad-template.yaml";
  std::ofstream(file) << broken;
  const Output r = RunCli({"validate", "-f", file});
  EXPECT_EQ(r.code, kExitInvalidInput) << r.out;
  EXPECT_NE(r.err.find("spec.tasks[0].variants[0].template.spec: must be an object"),
            std::string::npos)
      << r.err;
}

TEST(Cli, ValidatePrintsFitQuality) {
  const Output r =
      RunCli({"validate", "-f",
              std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/profiled-chain.yaml"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("RMSE"), std::string::npos) << r.out;
}

// A pipeline that scales to zero: validate says what each path's cold request may wait.
TEST(Cli, ValidatePrintsEachPathsColdHold) {
  const Output r =
      RunCli({"validate", "-f",
              std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/scale-to-zero.yaml"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("a path sleeps after 300 s without a request"), std::string::npos) << r.out;
  // 10 s start-up, 30 s for the wake, 500 ms SLO.
  EXPECT_NE(r.out.find("    images: 40.5 s\n"), std::string::npos) << r.out;
}

// The installed binary behaves like the in-process command.
TEST(Cli, BinaryExitCodes) {
  const std::string cli = PIPESCALE_CLI;
  EXPECT_EQ(std::system((cli + " validate -f " + kExample + " > /dev/null").c_str()), 0);
  const int status =
      std::system((cli + " plan -f /nonexistent.yaml --rate 1 2> /dev/null").c_str());
  EXPECT_EQ(WEXITSTATUS(status), kExitInvalidInput);
}

TEST(Cli, KairosReportsCostAndUpperBound) {
  const std::string rm2 = std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/kairos-rm2.yaml";
  const Output r = RunCli({"plan", "-f", rm2, "--rate", "40", "-o", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["optimizer"], "kairos");  // the spec's optimizer
  double cost = 0;
  for (const auto& t : j["tasks"]) {
    cost += t["replicas"].get<int>() * (t["hardwareClass"] == "g4dn-xlarge"   ? 0.526
                                        : t["hardwareClass"] == "c5n-2xlarge" ? 0.432
                                        : t["hardwareClass"] == "r5n-large"   ? 0.149
                                                                              : 0.1664);
  }
  EXPECT_NEAR(j["costPerHour"].get<double>(), cost, 1e-9);
  EXPECT_GE(0.85 * j["upperBoundQps"].get<double>(), 40);
  EXPECT_EQ(j["pools"][0]["members"][0]["hardwareClass"], "g4dn-xlarge");
  EXPECT_FALSE(j.contains("forecast"));
}

TEST(Cli, MarkForecastsFromAHistoryFile) {
  const std::string file = ::testing::TempDir() + "/history.csv";
  {
    std::ofstream out(file);
    out << "time,rate\n";
    for (int t = 0; t < 300; t += 5) out << t << "," << 100 + t / 5 << "\n";  // +0.2 rps/s
  }
  const Output r =
      RunCli({"plan", "-f", kExample, "--optimizer", "mark", "--history", file, "-o", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["optimizer"], "mark");
  ASSERT_TRUE(j.contains("forecast"));
  const auto& rps = j["forecast"]["rps"];
  EXPECT_DOUBLE_EQ(rps[0].get<double>(), 159);  // the last step's peak is the rate now
  EXPECT_TRUE(j.contains("costPerHour"));
  // --history belongs to mark; a malformed file names its line.
  EXPECT_EQ(RunCli({"plan", "-f", kExample, "--history", file}).code, kExitInvalidInput);
  {
    std::ofstream out(file);
    out << "0,1\n5,oops\n";
  }
  const Output bad = RunCli({"plan", "-f", kExample, "--optimizer", "mark", "--history", file});
  EXPECT_EQ(bad.code, kExitInvalidInput);
  EXPECT_NE(bad.err.find("line 2"), std::string::npos) << bad.err;
}

// --- Hostile input: the CLI refuses it with a clear message, never a crash or a wild plan ---

// A valid table whose latency falls with the batch, on a Kairos class that must take queries
// larger than its last point: the planner aborted on it (issue 25), and the operator with it.
TEST(Cli, AFallingTableProfileIsPlannedNotAborted) {
  std::ifstream in(std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/kairos-rm2.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("points: [[10,5.704]");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, text.find('\n', at) - at, "points: [[1, 90.0], [2, 80.0], [3, 70.0]]");
  const std::string file = ::testing::TempDir() + "/falling.yaml";
  std::ofstream(file) << text;
  ASSERT_EQ(RunCli({"validate", "-f", file}).code, kExitOk);
  for (const char* rate : {"0", "49", "1000"}) {
    const Output r = RunCli({"plan", "-f", file, "--rate", rate, "-o", "json"});
    ASSERT_EQ(r.code, kExitOk) << rate << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["optimizer"], "kairos");
  }
}

TEST(Cli, RatesMustBeFiniteAndInRange) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"inf", "--rate must be a finite number of requests per second, got inf"},
      {"nan", "--rate must be a finite number of requests per second, got nan"},
      {"-1", "--rate must be >= 0, got -1"},
      {"1e10", "--rate must be at most 1000000000 requests per second, got 1e+10"},
      {"1e400", "--rate must be a finite number of requests per second, got inf"},
      {"0x10", "--rate needs a number of requests per second, got \"0x10\""},
      {"", "--rate needs a number of requests per second, got \"\""},
      {"5\x01", "--rate needs a number of requests per second, got \"5\\x01\""},
  };
  for (const auto& [rate, message] : cases) {
    const Output r = RunCli({"plan", "-f", kExample, "--rate", rate});
    EXPECT_EQ(r.code, kExitInvalidInput) << rate;
    EXPECT_EQ(r.err, "pipescale plan: " + message + "\n") << rate;
  }
  const Output path = RunCli({"plan", "-f", kExample, "--path-rate", "car-qa=inf"});
  EXPECT_EQ(path.code, kExitInvalidInput);
  EXPECT_EQ(path.err,
            "pipescale plan: --path-rate \"car-qa\": must be a finite number of "
            "requests per second, got inf\n");
  // The largest rate is planned, and a plan that would need more replicas than any plan asks
  // for is Infeasible, saying which task, instead of wrapping to a handful.
  const Output huge = RunCli({"plan", "-f", kExample, "--rate", "1e9", "-o", "json"});
  ASSERT_EQ(huge.code, kExitOk) << huge.err;
  const auto j = nlohmann::json::parse(huge.out);
  EXPECT_EQ(j["status"], "Infeasible");
  for (const auto& t : j["tasks"]) EXPECT_LE(t["replicas"].get<int>(), 10000);
  bool named = false;
  for (const auto& note : j["notes"]) {
    named =
        named || note.get<std::string>().find("need more than 10000 replicas") != std::string::npos;
  }
  EXPECT_TRUE(named) << j["notes"];
}

TEST(Cli, EndlessOrHugeFilesAreRefused) {
  const Output zero = RunCli({"validate", "-f", "/dev/zero"});
  EXPECT_EQ(zero.code, kExitInvalidInput);
  EXPECT_NE(zero.err.find("the document is 1048577 bytes; at most 1048576 are read"),
            std::string::npos)
      << zero.err;
  const std::string file = ::testing::TempDir() + "/far-history.csv";
  std::ofstream(file) << "0,1\n1e15,2\n";
  const Output far = RunCli({"plan", "-f", kExample, "--optimizer", "mark", "--history", file});
  EXPECT_EQ(far.code, kExitInvalidInput);
  EXPECT_NE(far.err.find("line 2: the history spans more than 100000 steps of 10 s"),
            std::string::npos)
      << far.err;
  std::ofstream(file) << "0,1\n5,1e12\n";
  const Output fast = RunCli({"plan", "-f", kExample, "--optimizer", "mark", "--history", file});
  EXPECT_EQ(fast.code, kExitInvalidInput);
  EXPECT_NE(fast.err.find("line 2: the rate must be at most 1000000000 requests per second"),
            std::string::npos)
      << fast.err;
}

TEST(Cli, MessagesQuoteWhatTheUserTyped) {
  const Output arg = RunCli({"plan", "--b\x1b[2Jad", "-f", kExample});
  EXPECT_EQ(arg.err, "pipescale plan: unknown argument \"--b\\x1B[2Jad\"\n");
  const Output opt = RunCli({"plan", "-f", kExample, "--rate", "1", "--optimizer", "x\xff"});
  EXPECT_NE(opt.err.find("--optimizer: unknown optimizer \"x\\xFF\"; known: "), std::string::npos)
      << opt.err;
  const Output cmd = RunCli({std::string(200, 'c')});
  EXPECT_EQ(cmd.err.substr(0, 86), "unknown command \"" + std::string(64, 'c') + "\"…\n");
}

TEST(Cli, AnotherOptimizerChecksWhatItNeeds) {
  // fa2 is happy with burst classes only; mark would have no class to size.
  std::ifstream in(kExample);
  std::stringstream text;
  text << in.rdbuf();
  std::string burst = text.str();
  const std::string max = "maxReplicas: ";
  burst.replace(burst.find(max), burst.find('\n', burst.find(max)) - burst.find(max),
                "burst: {minWarm: 1}");
  const std::string file = ::testing::TempDir() + "/burst-only.yaml";
  std::ofstream(file) << burst;
  ASSERT_EQ(RunCli({"plan", "-f", file, "--rate", "5"}).code, kExitOk);
  const Output r = RunCli({"plan", "-f", file, "--rate", "5", "--optimizer", "mark"});
  EXPECT_EQ(r.code, kExitInvalidInput);
  EXPECT_NE(r.err.find("mark cannot plan this pipeline"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("has a profile only on burst classes; mark needs one on a main class"),
            std::string::npos)
      << r.err;
}
}  // namespace
}  // namespace pipescale::cli
