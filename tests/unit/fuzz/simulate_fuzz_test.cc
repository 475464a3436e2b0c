// What `pipescale simulate` reads from outside besides the pipeline (pipeline_fuzz_test covers
// that): trace specs and CSV traces, cluster files, and the box's reports it validates against.
// Each is generated from its grammar with hostile numbers (0, denormals, 1e300, nan, inf,
// negatives, overflowing integers) and then damaged (bytes dropped, repeated, flipped). A case
// fails when a parser crashes or throws, or when what it accepts breaks the bounds the simulator
// relies on: a trace within trace::kMaxSeconds and trace::kMaxRps with finite, ordered parts, Ready
// Nodes with names, a box run of non-negative counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "api/nodes_file.h"
#include "gym/validate.h"
#include "trace/trace.h"

namespace pipescale {
namespace {

constexpr int kCases = 3000;

std::string Pick(std::mt19937_64& rng, const std::vector<std::string>& from) {
  return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
}

// A plain number most of the time, so that cases reach past the first check.
std::string Number(std::mt19937_64& rng) {
  if (std::uniform_int_distribution<int>(0, 9)(rng) < 6) {
    return Pick(rng, {"0", "1", "2", "10", "0.5", "30", "600", "86400"});
  }
  return Pick(rng, {"0",        "1",       "10",    "0.5",     "1e-300",
                    "4.9e-324", "1e300",   "1e308", "nan",     "inf",
                    "-1",       "-0",      "86400", "2678401", "999999999999999999999999",
                    "1e6",      "1000001", "0x10",  "",        " 5",
                    "3.",       ".5",      "1e",    "+2"});
}

// Drops, repeats or flips a few bytes of `text`, half the time.
std::string Damage(std::mt19937_64& rng, std::string text) {
  const int edits = std::max(0, std::uniform_int_distribution<int>(-3, 3)(rng));
  for (int i = 0; i < edits && !text.empty(); ++i) {
    const size_t at = std::uniform_int_distribution<size_t>(0, text.size() - 1)(rng);
    switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
      case 0:
        text.erase(at, std::uniform_int_distribution<size_t>(1, 8)(rng));
        break;
      case 1:
        text.insert(at, text.substr(at, std::uniform_int_distribution<size_t>(1, 16)(rng)));
        break;
      default:
        text[at] = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    }
  }
  return text;
}

std::string TraceSpec(std::mt19937_64& rng) {
  const std::string kind = Pick(rng, {"", "fa2:", "normal:", "diurnal:", "csv:f", "steps"});
  const int numbers = std::uniform_int_distribution<int>(0, 6)(rng);
  std::string spec = kind == "steps" ? "" : kind;
  for (int i = 0; i < numbers; ++i) {
    spec += (i == 0 ? "" : Pick(rng, {":", ":", ",", ";"})) + Number(rng);
  }
  return Damage(rng, spec);
}

std::string CsvText(std::mt19937_64& rng) {
  std::string text = Pick(rng, {"", "# a trace\n", "seconds,rps\n"});
  const int lines = std::uniform_int_distribution<int>(0, 20)(rng);
  for (int i = 0; i < lines; ++i) {
    text += Number(rng);
    if (std::uniform_int_distribution<int>(0, 1)(rng) == 1) text += "," + Number(rng);
    text += Pick(rng, {"\n", "\r\n", "", ",\n", "#x\n"});
  }
  return Damage(rng, text);
}

TEST(SimulateInputFuzz, TracesParseIntoBoundedTracesOrErrors) {
  std::mt19937_64 rng(0x7ace);
  int accepted = 0;
  for (int i = 0; i < kCases; ++i) {
    const std::string spec = TraceSpec(rng);
    const std::string csv = CsvText(rng);
    const auto t = trace::ParseTrace(spec, rng(), csv);
    if (!t) {
      EXPECT_FALSE(t.error().message.empty()) << spec;
      continue;
    }
    ++accepted;
    ASSERT_TRUE(std::isfinite(t->Seconds()) && t->Seconds() <= trace::kMaxSeconds) << spec;
    ASSERT_TRUE(std::isfinite(t->MeanRps())) << spec;
    for (const trace::Step& s : t->steps) {
      ASSERT_TRUE(std::isfinite(s.rps) && s.rps >= 0 && s.rps <= trace::kMaxRps) << spec;
      ASSERT_TRUE(std::isfinite(s.seconds) && s.seconds >= 0) << spec;
    }
    ASSERT_TRUE(std::is_sorted(t->arrivals.begin(), t->arrivals.end())) << spec;
  }
  std::printf("%d of %d traces accepted\n", accepted, kCases);
  EXPECT_GT(accepted, kCases / 50);  // the generator reaches the valid shapes too
}

std::string NodesText(std::mt19937_64& rng) {
  std::string text = "nodes:\n";
  const int nodes = std::uniform_int_distribution<int>(0, 4)(rng);
  for (int i = 0; i < nodes; ++i) {
    text += "  - name: " + Pick(rng, {"gpu", "cpu-node", "", "\"a b\"", "[x]", "n" + Number(rng)}) +
            "\n";
    text += "    count: " + Number(rng) + "\n";
    text += "    labels: {" + Pick(rng, {"", "pool: gpu", "a: 1, b: [2]", "k: {x: y}"}) + "}\n";
    text += "    capacity: {cpu: \"" + Number(rng) +
            "\", memory: " + Pick(rng, {"16Gi", "1e300", "-1", "nan", "\"\"", "12Qi"}) +
            ", nvidia.com/gpu: " + Number(rng) + "}\n";
    text += "    taints: " +
            Pick(rng, {"[]", "[{key: gpu, effect: NoSchedule}]", "[{}]", "x", "[[[]]]"}) + "\n";
  }
  return Damage(rng, text);
}

TEST(SimulateInputFuzz, ClusterFilesParseIntoReadyNodesOrErrors) {
  std::mt19937_64 rng(0xc105);
  int accepted = 0;
  for (int i = 0; i < kCases; ++i) {
    const std::string text = NodesText(rng);
    const auto nodes = api::ParseNodesFile(text, "nodes.yaml");
    if (!nodes) {
      EXPECT_EQ(nodes.error().message.rfind("nodes.yaml", 0), 0u) << nodes.error().message;
      continue;
    }
    ++accepted;
    for (const nlohmann::json& node : *nodes) {
      ASSERT_TRUE(node.is_object()) << text;
      ASSERT_TRUE(node["metadata"]["name"].is_string()) << text;
      ASSERT_FALSE(node["metadata"]["name"].get<std::string>().empty()) << text;
    }
  }
  std::printf("%d of %d cluster files accepted\n", accepted, kCases);
  EXPECT_GT(accepted, kCases / 100);
}

std::string ReportText(std::mt19937_64& rng) {
  std::string text = "{\"paths\": {";
  const int paths = std::uniform_int_distribution<int>(0, 3)(rng);
  for (int i = 0; i < paths; ++i) {
    text += (i == 0 ? "" : ",") + Pick(rng, {"\"cars\"", "\"\"", "\"a\\u0000b\""}) + ": {" +
            "\"sent\": " + Number(rng) + ", \"codes\": {\"200\": " + Number(rng) +
            ", \"503\": " + Pick(rng, {"1", "-1", "\"x\"", "1.5", "[]"}) + "}" +
            ", \"sloAttainment\": " + Number(rng) + ", \"p99Ms\": " + Number(rng) +
            ", \"p50Ms\": " + Pick(rng, {"1", "null", "\"1\"", "{}"}) + "}";
  }
  return Damage(rng, text + "}}");
}

std::string TimelineText(std::mt19937_64& rng) {
  std::string text = Pick(rng, {"seconds,task,ready\n", "", "x\n"});
  const int lines = std::uniform_int_distribution<int>(0, 10)(rng);
  for (int i = 0; i < lines; ++i) {
    text += Number(rng) + "," + Pick(rng, {"alpr", "", "a,b"}) + "," + Number(rng) + "\n";
  }
  return Damage(rng, text);
}

TEST(SimulateInputFuzz, BoxRunsParseIntoCountsOrErrors) {
  std::mt19937_64 rng(0xb0c5);
  int accepted = 0;
  for (int i = 0; i < kCases; ++i) {
    const std::string report = ReportText(rng);
    const std::string timeline = TimelineText(rng);
    const auto run = gym::ReadBoxRun(report, timeline);
    if (!run) {
      EXPECT_FALSE(run.error().message.empty());
      continue;
    }
    ++accepted;
    for (const auto& [name, path] : run->paths) {
      ASSERT_GE(path.sent, 0) << report;
      for (const auto& [code, n] : path.codes) ASSERT_GE(n, 0) << report;
    }
  }
  std::printf("%d of %d box runs accepted\n", accepted, kCases);
  EXPECT_GT(accepted, kCases / 100);
}

}  // namespace
}  // namespace pipescale
