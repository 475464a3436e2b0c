// Issue 46's regression suite of traces: every example's own optimizer through the whole loop
// (pipescale simulate's engine) on fixed shapes of traffic at the example's own rate, each run
// held to the worst path's share within its SLO and the cost it kept when the bounds were last
// measured (tests/data/trace-regression.csv). A change that loses a burst, or pays more for the
// same, fails here; one that gains tightens the bounds in the same commit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "api/document.h"
#include "api/nodes_file.h"
#include "common/file.h"
#include "gym/simulation.h"
#include "trace/trace.h"

namespace pipescale::gym {
namespace {

const std::string kRoot = PIPESCALE_SOURCE_DIR;

// An example and the rate its shapes are drawn around (bench/gym-traces.sh's base rates).
struct Example {
  std::string name;
  double base_rps = 0;
  bool demo_nodes = false;  // Loki plans within the demo's nodes
};

void PrintTo(const Example& example, std::ostream* out) { *out << example.name; }

const std::vector<Example> kExamples = {{"fa2-gpu", 17.5},
                                        {"fa2-cpu", 17.5},
                                        {"loki-traffic", 100, true},
                                        {"kairos-rm2", 40},
                                        {"mark-classify", 50}};

std::string Rate(double rps) {
  char out[32];
  std::snprintf(out, sizeof out, "%.2f", rps);
  return out;
}

// The shapes, each 900 s: steps up and back, a ramp to twice the rate, bursts of three times
// it for 10 s in every minute, a day compressed into 15 minutes with bursts, an idle gap, and
// Azure's LLM conversation trace (bench/traces, CC BY 4.0) scaled to the rate.
std::string Shape(const std::string& shape, double b) {
  if (shape == "step") return Rate(b) + ":300," + Rate(3 * b) + ":300," + Rate(b) + ":300";
  if (shape == "ramp") {
    std::string out;
    for (int k = 0; k < 20; ++k) out += Rate(b * (0.5 + 1.5 * k / 19)) + ":30,";
    return out + Rate(2 * b) + ":300";
  }
  if (shape == "bursts") {
    std::string out;
    for (int k = 0; k < 15; ++k) out += (k ? "," : "") + Rate(b) + ":50," + Rate(3 * b) + ":10";
    return out;
  }
  if (shape == "diurnal") return "diurnal:" + Rate(b / 2) + ":" + Rate(1.5 * b) + ":900:900:3";
  if (shape == "idle") return Rate(b) + ":200,0:400," + Rate(b) + ":300";
  return "csv:" + kRoot + "/bench/traces/azure-llm-conv.csv";  // its text is read apart
}

struct Bound {
  std::string example;
  std::string shape;
  double worst_path_min = 0;  // share within the SLO on the worst path, at least
  double cost_max = 0;        // dollars over the run, at most
};

std::vector<Bound> Bounds() {
  std::ifstream in(kRoot + "/tests/data/trace-regression.csv");
  std::vector<Bound> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream fields(line);
    Bound b;
    if (fields >> b.example >> b.shape >> b.worst_path_min >> b.cost_max) out.push_back(b);
  }
  return out;
}

Result<PolicyReport> RunShape(const Example& example, const std::string& shape) {
  const auto text = ReadFileText(kRoot + "/deploy/examples/" + example.name + ".yaml");
  if (!text) return text.error();
  auto pipeline = api::ParseDocument(*text);
  if (!pipeline) return pipeline.error();
  Options options;
  const std::string spec = Shape(shape, example.base_rps);
  std::string csv;
  if (spec.starts_with("csv:")) {
    auto file = ReadFileText(spec.substr(4), "the trace");
    if (!file) return file.error();
    csv = std::move(*file);
  }
  auto trace = trace::ParseTrace(spec, 42, csv);
  if (!trace) return trace.error();
  const double factor = csv.empty() ? 1 : example.base_rps / trace->MeanRps();
  auto scaled = trace::ScaleTrace(std::move(*trace), factor);
  if (!scaled) return scaled.error();
  options.trace = std::move(*scaled);
  options.seconds = 900;
  if (example.demo_nodes) {
    auto nodes = api::ReadNodesFile(kRoot + "/hack/demo-nodes.yaml");
    if (!nodes) return nodes.error();
    options.nodes = std::move(*nodes);
  }
  return Simulate(*pipeline, options);
}

double WorstPath(const PolicyReport& report) {
  double worst = 1;
  for (const auto& [name, path] : report.paths) worst = std::min(worst, path.Attainment());
  return worst;
}

class TraceRegression : public ::testing::TestWithParam<Example> {};

TEST_P(TraceRegression, KeepsItsBoundsOnEveryShape) {
  const Example& example = GetParam();
  int checked = 0;
  for (const Bound& bound : Bounds()) {
    if (bound.example != example.name) continue;
    SCOPED_TRACE(example.name + " on " + bound.shape);
    const auto report = RunShape(example, bound.shape);
    ASSERT_TRUE(report.ok()) << report.error().message;
    // What the bounds file's rows are re-measured from, when a change moves them.
    std::printf("%s,%s,%.4f,%.4f\n", example.name.c_str(), bound.shape.c_str(), WorstPath(*report),
                report->total_cost);
    EXPECT_GE(WorstPath(*report), bound.worst_path_min);
    EXPECT_LE(report->total_cost, bound.cost_max);
    ++checked;
  }
  EXPECT_EQ(checked, 6) << "one row per shape in tests/data/trace-regression.csv";
}

INSTANTIATE_TEST_SUITE_P(Examples, TraceRegression, ::testing::ValuesIn(kExamples),
                         [](const auto& instance) {
                           std::string name = instance.param.name;
                           std::erase(name, '-');
                           return name;
                         });

}  // namespace
}  // namespace pipescale::gym
