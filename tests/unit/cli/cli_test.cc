#include "cli/cli.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

namespace pipescale::cli {
namespace {

struct Output {
  int code;
  std::string out;
  std::string err;
};

Output RunCli(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = Run(args, out, err);
  return {code, out.str(), err.str()};
}

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

TEST(Cli, InvalidPipelineExitsTwoWithFieldErrors) {
  std::ifstream in(kExample);
  std::stringstream text;
  text << in.rdbuf();
  std::string broken = text.str();
  broken.replace(broken.find("next: [{task: quan}]"), 20, "next: [{task: qaun}]");
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

TEST(Cli, ValidatePrintsFitQuality) {
  const Output r =
      RunCli({"validate", "-f",
              std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/profiled-chain.yaml"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("RMSE"), std::string::npos) << r.out;
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
  const std::string file = testing::TempDir() + "/history.csv";
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

}  // namespace
}  // namespace pipescale::cli
