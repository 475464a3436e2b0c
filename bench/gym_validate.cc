// pipescale simulate against the cluster in a box: reads a hack/run.sh run (the load generator's
// report and the Ready-replicas timeline in its directory), simulates the same pipeline, trace,
// seed and nodes file, and prints how they agree (src/gym/validate.h), as a Markdown table.
//
//   gym_validate -f PIPELINE.yaml --trace SPEC --nodes FILE --box DIR [--seeds 8]
// The simulated side is the mean of --seeds runs (seeds 1..N).
// Exit 0 when every figure is within the tolerance, 1 when one is not, 2 for bad input.
#include <iostream>
#include <map>

#include "api/document.h"
#include "api/nodes_file.h"
#include "common/file.h"
#include "gym/simulation.h"
#include "gym/validate.h"

namespace {

using namespace pipescale;

// The file's text, "" when it cannot be read (the parser then says what is missing).
std::string Read(const std::string& file) {
  auto text = ReadFileText(file);
  return text ? *text : "";
}

int Main(const std::map<std::string, std::string>& flags) {
  auto pipeline = api::ParseDocument(Read(flags.at("-f")));
  if (!pipeline) return std::cerr << pipeline.error().message << "\n", 2;
  auto box = gym::ReadBoxRun(Read(flags.at("--box") + "/loadgen.json"),
                             Read(flags.at("--box") + "/timeline.csv"));
  if (!box) return std::cerr << box.error().message << "\n", 2;
  gym::Options options;
  options.seed = static_cast<unsigned>(std::stoul(flags.at("--seed")));
  auto trace = trace::ParseTrace(flags.at("--trace"), options.seed);
  if (!trace) return std::cerr << trace.error().message << "\n", 2;
  options.trace = *trace;
  options.interval_row_s = 5;  // hack/run.sh samples every 5 s
  // Where the round trip falls (gym::Options): to weigh the simulator's model of it.
  options.call_overhead_ms = std::stod(flags.at("--overhead-ms"));
  options.call_to_pod_ms = std::stod(flags.at("--to-pod-ms"));
  options.call_from_pod_ms = std::stod(flags.at("--from-pod-ms"));
  if (!flags.at("--nodes").empty()) {
    auto nodes = api::ReadNodesFile(flags.at("--nodes"));
    if (!nodes) return std::cerr << nodes.error().message << "\n", 2;
    options.nodes = *nodes;
  }
  // The simulator's mean over seeds: the box is one sample of its own.
  std::vector<gym::PolicyReport> runs;
  for (unsigned seed = 1; seed <= static_cast<unsigned>(std::stoul(flags.at("--seeds"))); ++seed) {
    options.seed = seed;
    auto trace_for_seed = trace::ParseTrace(flags.at("--trace"), seed);
    if (trace_for_seed) options.trace = *trace_for_seed;
    auto sim = gym::Simulate(*pipeline, options);
    if (!sim) return std::cerr << sim.error().message << "\n", 2;
    runs.push_back(std::move(*sim));
  }
  const auto agreements = gym::Compare(*box, runs);
  std::cout << gym::RenderAgreement(agreements);
  for (const gym::Agreement& a : agreements) {
    if (!a.within) return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {{"-f", ""},
                                              {"--trace", "8:60,27:90,8:90"},
                                              {"--nodes", ""},
                                              {"--box", ""},
                                              {"--seed", "42"},
                                              {"--seeds", "8"},
                                              {"--overhead-ms", "2"},
                                              {"--to-pod-ms", "0"},
                                              {"--from-pod-ms", "0"}};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!flags.contains(argv[i])) {
      std::cerr << "unknown flag " << argv[i] << "\n";
      return 2;
    }
    flags[argv[i]] = argv[i + 1];
  }
  if (flags["-f"].empty() || flags["--box"].empty()) {
    std::cerr << "usage: gym_validate -f PIPELINE.yaml --box DIR [--trace SPEC] [--nodes FILE]\n";
    return 2;
  }
  return Main(flags);
}
