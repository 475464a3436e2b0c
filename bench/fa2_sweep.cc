// The resource-efficiency experiment of FA2 (RTAS'22 VI.C, Fig. 12 on CPU and Fig. 14 on GPU):
// total instances of each optimizer on the paper's application at 6..60 RPS spread evenly over
// the six paths, printed as the markdown tables of bench/README.md.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "api/pipeline_parse.h"
#include "api/workload.h"
#include "optimizer/registry.h"

namespace {

using namespace pipescale;

void Sweep(const char* file, const char* title) {
  auto parsed =
      api::ParsePipelineFile(std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/" + file);
  if (!parsed.pipeline) {
    std::fprintf(stderr, "%s: %s\n", file, parsed.errors[0].ToString().c_str());
    std::exit(1);
  }
  const model::Pipeline& app = *parsed.pipeline;
  const std::vector<std::string> algorithms = {"fa2", "ds2", "inferline", "grandslam", "exact"};

  std::printf("### %s\n\n| RPS | fa2 | ds2 | inferline | grandslam | exact |\n", title);
  std::printf("|---:|---:|---:|---:|---:|---:|\n");
  std::vector<double> ratio_sum(algorithms.size(), 0);
  std::vector<int> ratio_count(algorithms.size(), 0);
  int fa2_optimal = 0, rows = 0;
  for (int rps = 6; rps <= 60; rps += 6) {
    const model::Workload workload = api::MakeWorkload(app, rps, {}).value();
    std::printf("| %d |", rps);
    int fa2 = 0;
    for (size_t a = 0; a < algorithms.size(); ++a) {
      const model::Plan plan = optimizer::Solve(app, workload, algorithms[a]);
      const bool meets = plan.report.status != model::SolveStatus::kInfeasible;
      const int total = plan.TotalReplicas();
      if (a == 0) fa2 = total;
      if (meets) {
        ratio_sum[a] += static_cast<double>(total) / fa2;
        ++ratio_count[a];
      }
      if (algorithms[a] == "exact") fa2_optimal += total == fa2;
      // A baseline plan that misses an SLO is marked: it is cheap because it is wrong.
      std::printf(" %d%s |", total, meets ? "" : " (misses SLO)");
    }
    std::printf("\n");
    ++rows;
  }
  std::printf("| mean ratio to fa2 (SLO-meeting plans) |");
  for (size_t a = 0; a < algorithms.size(); ++a) {
    if (ratio_count[a] == 0) {
      std::printf(" - |");
    } else {
      std::printf(" %.3f |", ratio_sum[a] / ratio_count[a]);
    }
  }
  std::printf("\n\nfa2 equals exact at %d of %d rates.\n\n", fa2_optimal, rows);
}

}  // namespace

int main() {
  Sweep("fa2-cpu.yaml", "CPU profiles (paper Fig. 12)");
  Sweep("fa2-gpu.yaml", "GPU profiles (paper Fig. 14)");
  return 0;
}
