// Google Benchmark: FA2 and the exact branch and bound on the paper's application, on CPU and
// GPU profiles, at low, medium and high load.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "api/pipeline_parse.h"
#include "api/workload.h"
#include "optimizer/exact.h"
#include "optimizer/fa2.h"
#include "optimizer/problem.h"

namespace {

using namespace pipescale;

const model::Pipeline& App(bool gpu) {
  static const auto load = [](const char* file) {
    auto parsed =
        api::ParsePipelineFile(std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/" + file);
    if (!parsed.pipeline) {
      std::fprintf(stderr, "%s: %s\n", file, parsed.errors[0].ToString().c_str());
      std::exit(1);
    }
    return *parsed.pipeline;
  };
  static const model::Pipeline cpu = load("fa2-cpu.yaml");
  static const model::Pipeline gpu_app = load("fa2-gpu.yaml");
  return gpu ? gpu_app : cpu;
}

optimizer::Problem Problem(const benchmark::State& state) {
  const model::Pipeline& app = App(state.range(0) == 1);
  return optimizer::Compile(app, api::MakeWorkload(app, state.range(1), {}).value());
}

void BM_Fa2(benchmark::State& state) {
  const optimizer::Problem problem = Problem(state);
  for (auto _ : state) benchmark::DoNotOptimize(optimizer::SolveFa2(problem));
}

void BM_Exact(benchmark::State& state) {
  const optimizer::Problem problem = Problem(state);
  for (auto _ : state) benchmark::DoNotOptimize(optimizer::SolveExact(problem));
}

// Compiling the problem (profiles to choices and Pareto fronts) is part of every plan.
void BM_Compile(benchmark::State& state) {
  const model::Pipeline& app = App(state.range(0) == 1);
  const model::Workload workload = api::MakeWorkload(app, state.range(1), {}).value();
  for (auto _ : state) benchmark::DoNotOptimize(optimizer::Compile(app, workload));
}

// Args: {0 = CPU profiles / 1 = GPU profiles, total RPS}.
void Loads(benchmark::internal::Benchmark* b) {
  for (int gpu : {0, 1}) {
    for (int rps : {6, 27, 60}) b->Args({gpu, rps});
  }
  b->ArgNames({"gpu", "rps"})->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_Fa2)->Apply(Loads);
BENCHMARK(BM_Exact)->Apply(Loads);
BENCHMARK(BM_Compile)->Apply(Loads);

}  // namespace

BENCHMARK_MAIN();
