// Loki on the traffic-analysis example (deploy/examples/loki-traffic.yaml, 20 GPU workers):
// Google Benchmark timings of each MILP step and of MostAccurateFirst; with --capacity the
// capacity curve of the paper's headline claim, with --sweep accuracy scaling's time and
// accuracy over 100-2000 frames/s against the proven optimum, as markdown.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "api/pipeline_parse.h"
#include "api/workload.h"
#include "common/strings.h"
#include "optimizer/loki.h"

namespace {

using namespace pipescale;

model::Pipeline Example(const char* file) {
  auto parsed =
      api::ParsePipelineFile(std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/" + file);
  if (!parsed.pipeline) std::exit(1);
  return *parsed.pipeline;
}

const model::Pipeline& Traffic() {
  static const model::Pipeline pipeline = Example("loki-traffic.yaml");
  return pipeline;
}

model::Workload At(double rps, const model::Pipeline& pipeline = Traffic()) {
  return api::MakeWorkload(pipeline, rps, {}).value();
}

// Hardware scaling alone (the demand fits the cluster with the most accurate variants).
void BM_HardwareScaling(benchmark::State& state) {
  const model::Workload workload = At(state.range(0));
  optimizer::LokiOptions options;
  options.hardware_scaling_only = true;
  for (auto _ : state) benchmark::DoNotOptimize(optimizer::SolveLoki(Traffic(), workload, options));
}
BENCHMARK(BM_HardwareScaling)->Arg(100)->Arg(300)->Unit(benchmark::kMillisecond);

// Both steps: hardware scaling fails, accuracy scaling plans (default 1 s limit).
void BM_AccuracyScaling(benchmark::State& state) {
  const model::Workload workload = At(state.range(0));
  model::Plan plan;
  for (auto _ : state) plan = optimizer::SolveLoki(Traffic(), workload);
  state.counters["accuracy"] = optimizer::LokiPart(plan).accuracy;
  state.counters["optimal"] = plan.report.status == model::SolveStatus::kOptimal;
}
BENCHMARK(BM_AccuracyScaling)
    ->Arg(500)
    ->Arg(1000)
    ->Arg(2000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

void BM_RouteMostAccurateFirst(benchmark::State& state) {
  const model::Workload workload = At(state.range(0));
  model::Plan plan = optimizer::SolveLoki(Traffic(), workload);
  for (auto _ : state) {
    optimizer::RouteMostAccurateFirst(Traffic(), workload, plan);
    benchmark::DoNotOptimize(optimizer::LokiPart(plan).routing.data());
  }
  state.counters["tables"] = static_cast<double>(optimizer::LokiPart(plan).routing.size());
}
BENCHMARK(BM_RouteMostAccurateFirst)->Arg(300)->Arg(1000)->Unit(benchmark::kMicrosecond);

// The largest demand (to 1%) whose plan is not Overloaded.
double Capacity(const optimizer::LokiOptions& options) {
  double lo = 1, hi = 20000;
  while (hi / lo > 1.01) {
    const double mid = std::sqrt(lo * hi);
    const auto plan = optimizer::SolveLoki(Traffic(), At(mid), options);
    (optimizer::LokiPart(plan).phase == model::Phase::kOverloaded ? hi : lo) = mid;
  }
  return lo;
}

void CapacityCurve() {
  optimizer::LokiOptions hardware;
  hardware.hardware_scaling_only = true;
  optimizer::LokiOptions floor90;
  floor90.accuracy_floor = 0.9;
  optimizer::LokiOptions any;
  for (auto* o : {&hardware, &floor90, &any}) o->milp.time_limit_seconds = 10;
  const double h = Capacity(hardware), f = Capacity(floor90), a = Capacity(any);
  std::printf("| policy | highest demand served (frames/s) | vs hardware scaling |\n");
  std::printf("|---|---:|---:|\n");
  std::printf("| hardware scaling only (most accurate variants) | %.0f | 1.00x |\n", h);
  std::printf("| accuracy scaling, every path >= 90%% accuracy | %.0f | %.2fx |\n", f, f / h);
  std::printf("| accuracy scaling, no floor | %.0f | %.2fx |\n", a, a / h);
}

// Milliseconds of wall time SolveLoki takes, the median of `runs`, and its last plan.
std::pair<double, model::Plan> Timed(const model::Pipeline& pipeline, double rps,
                                     const optimizer::LokiOptions& options, int runs = 3) {
  std::vector<double> ms;
  model::Plan plan;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    plan = optimizer::SolveLoki(pipeline, At(rps, pipeline), options);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], plan};
}

// Accuracy scaling over the paper's range of demand as the operator solves it (split by the
// tasks' budgets, 1 s limit), beside the optimum CBC proves for the whole MILP with a minute.
void Sweep(const char* file, const std::vector<double>& rates) {
  const model::Pipeline pipeline = Example(file);
  optimizer::LokiOptions proof;
  proof.milp.time_limit_seconds = 60;
  proof.split_by_budgets = false;
  std::printf("\n%s\n\n", file);
  std::printf(
      "| frames/s | time (median of 3) | accuracy | proven optimum (one MILP) | its time |\n");
  std::printf("|---:|---:|---:|---:|---:|\n");
  std::vector<double> times;
  double worst = 0;
  for (double rps : rates) {
    const auto [ms, plan] = Timed(pipeline, rps, {});
    const auto [proof_ms, best] = Timed(pipeline, rps, proof, 1);
    const auto accuracy = [](const model::Plan& p) {
      return StrFormat("%.5f%s", optimizer::LokiPart(p).accuracy,
                       p.report.status == model::SolveStatus::kOptimal ? "" : " (limit)");
    };
    std::printf("| %.0f | %.0f ms | %s | %s | %.0f ms |\n", rps, ms, accuracy(plan).c_str(),
                accuracy(best).c_str(), proof_ms);
    times.push_back(ms);
    worst =
        std::max(worst, optimizer::LokiPart(best).accuracy - optimizer::LokiPart(plan).accuracy);
  }
  std::sort(times.begin(), times.end());
  std::printf("\np95 %.0f ms over the range; accuracy at most %.1e below the proven optimum\n",
              times[static_cast<size_t>(std::ceil(0.95 * times.size())) - 1], worst);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--capacity") == 0) {
    CapacityCurve();
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--sweep") == 0) {
    Sweep("loki-traffic.yaml",
          {100, 200, 300, 400, 500, 600, 700, 800, 1000, 1200, 1500, 1750, 2000});
    Sweep("loki-social.yaml", {100, 300, 600, 800, 1000, 1500, 2000, 3000, 4000});
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
