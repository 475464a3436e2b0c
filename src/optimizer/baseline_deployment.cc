#include "optimizer/baseline_deployment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "model/limits.h"
#include "optimizer/graph.h"
#include "optimizer/problem.h"

namespace pipescale::optimizer {
namespace {

// The fastest d(1) of a variant over its classes: what splits a path's SLO before a class is
// chosen (the choice depends on the share, so the share cannot depend on the choice).
double FastestOneMs(const model::PipelineSpec& spec, const model::Variant& v) {
  double best = std::numeric_limits<double>::infinity();
  for (const model::Profile& p : v.profiles) best = std::min(best, BatchMs(spec, p.latency, 1));
  return std::isfinite(best) ? best : 0;
}

// Each task's share of the tightest SLO through it: every path's SLO split over its tasks by
// their fastest d(1); the spec's SLO (or none: infinity) for a task on no path with one.
std::vector<double> SloShares(const model::Pipeline& pipeline) {
  const model::PipelineSpec& spec = pipeline.spec;
  const double open =
      spec.slo.latency_ms > 0 ? spec.slo.latency_ms : std::numeric_limits<double>::infinity();
  std::vector<double> shares(spec.tasks.size(), open);
  std::vector<bool> on_path(spec.tasks.size(), false);
  for (const model::Path& path : spec.paths) {
    if (path.slo_ms <= 0) continue;
    std::vector<double> weights;
    for (const std::string& t : path.tasks) {
      weights.push_back(
          FastestOneMs(spec, spec.tasks[pipeline.TaskIndex(t)].MostAccurateVariant()));
    }
    const std::vector<double> split = SplitSlo(path.slo_ms, weights);
    for (size_t i = 0; i < path.tasks.size(); ++i) {
      const size_t t = pipeline.TaskIndex(path.tasks[i]);
      shares[t] = on_path[t] ? std::min(shares[t], split[i]) : split[i];
      on_path[t] = true;
    }
  }
  return shares;
}

// The task on one class: the batch asked for (within the variant's), else its largest whose
// service twice over fits the share (1 when none does); whether that fits, what a full batch
// takes and what a replica serves.
struct OnClass {
  bool fits = false;
  int batch = 1;
  double batch_ms = 0;
  double replica_rps = 0;
};

OnClass Size(const model::PipelineSpec& spec, const model::LatencyProfile& latency, int max_batch,
             int asked_batch, double share_ms, double overhead_ms) {
  const auto at = [&](int b) {
    const double ms = BatchMs(spec, latency, b) + overhead_ms;
    return OnClass{.fits = 2 * ms <= share_ms, .batch = b, .batch_ms = ms, .replica_rps = 0};
  };
  OnClass out = at(asked_batch > 0 ? std::min(asked_batch, max_batch) : 1);
  for (int b = 2; asked_batch <= 0 && b <= max_batch; ++b) {
    const OnClass next = at(b);
    if (!next.fits) break;
    out = next;
  }
  out.replica_rps = out.batch * 1000 / out.batch_ms;
  return out;
}

// The class a task runs on: the one asked for where its variant profiles it, else the cheapest
// per request among those that fit (first listed on ties), else the fastest.
std::pair<int, OnClass> ChooseClass(const model::Pipeline& pipeline, const model::Variant& v,
                                    double share_ms, const BaselineKnobs& knobs) {
  const model::PipelineSpec& spec = pipeline.spec;
  const int max_batch = std::min(v.max_batch, limits::kMaxBatch);
  int best = -1, fastest = -1;
  OnClass best_on, fastest_on;
  for (const model::Profile& p : v.profiles) {
    const int c = pipeline.HardwareClassIndex(p.hardware_class);
    const OnClass on =
        Size(spec, p.latency, max_batch, knobs.max_batch, share_ms, knobs.call_overhead_ms);
    if (p.hardware_class == knobs.hardware_class) return {c, on};
    if (fastest < 0 || on.batch_ms < fastest_on.batch_ms) {
      fastest = c;
      fastest_on = on;
    }
    if (!on.fits) continue;
    const double price = spec.hardware_classes[c].cost_per_hour / on.replica_rps;
    if (best < 0 || price < spec.hardware_classes[best].cost_per_hour / best_on.replica_rps) {
      best = c;
      best_on = on;
    }
  }
  return best >= 0 ? std::pair{best, best_on} : std::pair{fastest, fastest_on};
}

}  // namespace

double BatchMs(const model::PipelineSpec& spec, const model::LatencyProfile& latency, int batch) {
  double weight = 0, ms = 0;
  for (const model::QuerySize& q : spec.query_sizes) {
    weight += q.weight;
    ms += q.weight * latency.Ms(batch * q.size);
  }
  return weight > 0 ? ms / weight : latency.Ms(batch);
}

std::vector<BaselineTask> DeployBaseline(const model::Pipeline& pipeline,
                                         const model::Workload& floor, const BaselineKnobs& knobs) {
  const model::PipelineSpec& spec = pipeline.spec;
  const std::vector<double> shares = SloShares(pipeline);
  const std::vector<double> floor_rps = TaskRatesRps(pipeline, floor);
  const double target = std::clamp(knobs.target, 0.01, 1.0);
  std::vector<BaselineTask> out;
  for (size_t t = 0; t < spec.tasks.size(); ++t) {
    const model::Task& task = spec.tasks[t];
    const model::Variant& v = task.MostAccurateVariant();
    const auto [c, on] = ChooseClass(pipeline, v, shares[t], knobs);
    const model::HardwareClass& hw = spec.hardware_classes[c];
    const int most = hw.max_replicas ? std::max(1, *hw.max_replicas) : kMaxReplicas;
    const double needed = std::ceil(floor_rps[t] / (target * on.replica_rps));
    const int least = static_cast<int>(std::clamp(needed, 1.0, 1.0 * most));
    out.push_back({.variant = static_cast<int>(&v - task.variants.data()),
                   .hw_class = c,
                   .batch = on.batch,
                   .share_ms = shares[t],
                   .batch_ms = on.batch_ms,
                   .queue_timeout_ms = std::max(shares[t] - on.batch_ms, on.batch_ms),
                   .replica_rps = on.replica_rps,
                   .min_replicas = least,
                   .max_replicas = most});
  }
  return out;
}

}  // namespace pipescale::optimizer
