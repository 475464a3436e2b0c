// pipescale simulate against the cluster in a box: reads a hack/run.sh run (the load generator's
// report and the Ready-replicas timeline in its directory), simulates the same pipeline, trace,
// requests and nodes file, and prints how they agree (src/gym/validate.h), as a Markdown table.
//
//   gym_validate -f PIPELINE.yaml --trace SPEC --nodes FILE --box DIR [--seeds 8]
// The simulated side is the mean of --seeds runs of the requests the box's clients sent (the seed
// in its report), each under another draw of the world's chance (gym::SimulateBox).
// Exit 0 when every figure is within the tolerance, 1 when one is not, 2 for bad input.
#include <iostream>
#include <map>

#include "api/document.h"
#include "api/nodes_file.h"
#include "common/file.h"
#include "common/flags.h"
#include "gym/simulation.h"
#include "gym/validate.h"

namespace {

using namespace pipescale;

// The file's text, "" when it cannot be read (the parser then says what is missing).
std::string Read(const std::string& file) {
  auto text = ReadFileText(file);
  return text ? *text : "";
}

// The numeric flags, checked before anything is read: seeds and the round trip's parts in ms.
struct Numbers {
  unsigned seeds = 8;
  double overhead_ms = 2, to_pod_ms = 0, from_pod_ms = 0;
};

Result<Numbers> ReadNumbers(const std::map<std::string, std::string>& flags) {
  Numbers n;
  constexpr unsigned kMaxSeeds = 1000;
  constexpr double kMaxMs = 60000;
  auto seeds = ParseInteger("--seeds", flags.at("--seeds"), 1U, kMaxSeeds);
  if (!seeds) return seeds.error();
  n.seeds = *seeds;
  for (const auto& [name, value] :
       {std::pair{"--overhead-ms", &n.overhead_ms}, std::pair{"--to-pod-ms", &n.to_pod_ms},
        std::pair{"--from-pod-ms", &n.from_pod_ms}}) {
    auto parsed = ParseNumber(name, flags.at(name), 0, kMaxMs);
    if (!parsed) return parsed.error();
    *value = *parsed;
  }
  return n;
}

int Main(const std::map<std::string, std::string>& flags, const Numbers& numbers) {
  auto pipeline = api::ParseDocument(Read(flags.at("-f")));
  if (!pipeline) return std::cerr << pipeline.error().message << "\n", 2;
  auto box = gym::ReadBoxRun(Read(flags.at("--box") + "/loadgen.json"),
                             Read(flags.at("--box") + "/timeline.csv"));
  if (!box) return std::cerr << box.error().message << "\n", 2;
  gym::Options options;
  options.interval_row_s = 5;  // hack/run.sh samples every 5 s
  // Where the round trip falls (gym::Options): to weigh the simulator's model of it.
  options.call_overhead_ms = numbers.overhead_ms;
  options.call_to_pod_ms = numbers.to_pod_ms;
  options.call_from_pod_ms = numbers.from_pod_ms;
  if (!flags.at("--nodes").empty()) {
    auto nodes = api::ReadNodesFile(flags.at("--nodes"));
    if (!nodes) return std::cerr << nodes.error().message << "\n", 2;
    options.nodes = *nodes;
  }
  auto runs = gym::SimulateBox(*pipeline, *box, flags.at("--trace"), options,
                               static_cast<int>(numbers.seeds));
  if (!runs) return std::cerr << runs.error().message << "\n", 2;
  const auto agreements = gym::Compare(*box, *runs);
  std::cout << gym::RenderAgreement(agreements);
  for (const gym::Agreement& a : agreements) {
    if (!a.within) return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {{"-f", ""},           {"--trace", "8:60,27:90,8:90"},
                                              {"--nodes", ""},      {"--box", ""},
                                              {"--seeds", "8"},     {"--overhead-ms", "2"},
                                              {"--to-pod-ms", "0"}, {"--from-pod-ms", "0"}};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!flags.contains(argv[i])) {
      std::cerr << "unknown flag " << argv[i] << "\n";
      return 2;
    }
    flags[argv[i]] = argv[i + 1];
  }
  const auto numbers = ReadNumbers(flags);
  if (!numbers) return std::cerr << "gym_validate: " << numbers.error().message << "\n", 2;
  if (flags["-f"].empty() || flags["--box"].empty()) {
    std::cerr << "usage: gym_validate -f PIPELINE.yaml --box DIR [--trace SPEC] [--nodes FILE]\n";
    return 2;
  }
  return Main(flags, *numbers);
}
