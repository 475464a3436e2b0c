#include "reconciler/demand.h"

#include <algorithm>
#include <cmath>

#include "api/deployment.h"
#include "api/pipeline_parse.h"
#include "api/workload.h"
#include "optimizer/pool.h"
#include "reconciler/burst.h"
#include "reconciler/surge.h"

namespace pipescale::reconciler {
namespace {

// Loki plans for an EWMA of each path's rate; the first measurement starts it.
void SmoothRates(bool advance, const Demand& before, DemandStep& step) {
  for (auto& [path, rate] : step.workload.path_rates_rps) {
    auto it = before.rps.find(path);
    if (it == before.rps.end()) continue;
    rate = advance ? kEwmaAlpha * rate + (1 - kEwmaAlpha) * it->second : it->second;
  }
  step.demand.rps = step.workload.path_rates_rps;
}

// One rate per path per interval, the last `keep` of them (SeriesKept).
void ExtendSeries(size_t keep, const model::MetricsSnapshot& metrics, DemandStep& step) {
  for (const auto& [path, rate] : metrics.path_rates_rps) {
    std::vector<double>& s = step.demand.series[path];
    s.push_back(rate);
    if (s.size() > keep) s.erase(s.begin(), s.end() - static_cast<long>(keep));
  }
}

// Each path's rate raised by its rises over the lead time (burst.h).
void AllowForBursts(const model::Pipeline& pipeline, DemandStep& step) {
  const int lead = LeadIntervals(pipeline.spec);
  for (auto& [path, rate] : step.workload.path_rates_rps) {
    const auto it = step.demand.series.find(path);
    if (it == step.demand.series.end()) continue;
    rate = BurstRate(it->second, rate, lead, pipeline.spec.behavior.burst_allowance);
  }
}

// Each path's rate raised to the highest measured over the scale-down window (the last
// kBurstWindow intervals at most). A variant change restarts pods: on the EWMA alone a step from
// 100 to 300 requests/s passed through five rates, each a different mix of variants, and after a
// burst Loki went back to its slow, accurate variants just before the next one came.
void PeakOverWindow(const model::Pipeline& pipeline, DemandStep& step) {
  const double intervals =
      std::ceil(pipeline.spec.behavior.scale_down_window_seconds / pipeline.spec.interval_seconds);
  const auto look = static_cast<size_t>(std::clamp(intervals, 1.0, double{kBurstWindow}));
  for (auto& [path, rate] : step.workload.path_rates_rps) {
    const auto it = step.demand.series.find(path);
    if (it == step.demand.series.end() || it->second.empty()) continue;
    const std::vector<double>& s = it->second;
    const auto first = s.end() - static_cast<std::ptrdiff_t>(std::min(look, s.size()));
    rate = std::max(rate, *std::max_element(first, s.end()));
  }
}

// Replicas, Ready pods and batch sizes running per (task, class) of each task's most accurate
// variant, and every (task, variant, class) that has replicas.
void ReadRunning(const model::Pipeline& pipeline,
                 const std::map<std::string, api::DeploymentView>& deployments, DemandStep& step) {
  for (const model::Task& task : pipeline.spec.tasks) {
    const model::Variant& most_accurate = task.MostAccurateVariant();
    for (const model::Variant& v : task.variants) {
      for (const model::Profile& profile : v.profiles) {
        auto it = deployments.find(api::DeploymentName(pipeline, task, v, profile.hardware_class));
        if (it == deployments.end()) continue;
        const api::ManagedFields f = api::ReadManagedFields(it->second, v.batch_env);
        if (f.replicas.value_or(0) > 0) {
          step.input
              .running_variants[optimizer::RunningKey(task.name, v.name, profile.hardware_class)] =
              it->second.ready_replicas;
          step.input.pods_starting +=
              std::max(0, api::RunningReplicas(it->second) - it->second.ready_replicas);
        }
        if (&v != &most_accurate) continue;
        const std::string key = optimizer::PoolKey(task.name, profile.hardware_class);
        if (f.replicas) step.input.running[key] = *f.replicas;
        if (f.batch_size) step.input.running_batch[key] = *f.batch_size;
        step.input.ready[key] = it->second.ready_replicas;
      }
    }
  }
}

// The paths whose measured tail latency missed the SLO, unless the guard is cooling down; once
// it acts it judges again when the added replicas can serve, never sooner than 3 intervals.
void GuardLatePaths(const model::Pipeline& pipeline, const model::MetricsSnapshot& metrics,
                    double now, DemandStep& step) {
  if (now < step.demand.guard_quiet_until) return;
  for (const model::Path& path : pipeline.spec.paths) {
    auto it = metrics.path_latency_ms.find(path.name);
    if (it != metrics.path_latency_ms.end() && it->second > path.slo_ms) {
      step.input.late_paths.insert(path.name);
    }
  }
  if (step.input.late_paths.empty()) return;
  step.demand.guard_quiet_until = now + std::max(3 * pipeline.spec.interval_seconds,
                                                 optimizer::SlowestStartupSeconds(pipeline.spec));
}

// Whether the pipeline's capacity is still on its way: more than a tenth of its pods not yet
// Ready (a scale-out of a few pods beside many serving is not).
bool Starting(const std::map<std::string, api::DeploymentView>& deployments) {
  int ready = 0;
  int running = 0;
  for (const auto& [name, d] : deployments) {
    ready += d.ready_replicas;
    running += api::RunningReplicas(d);
  }
  return ready < 0.9 * running;
}

void PlanForSurges(const model::Pipeline& pipeline, const model::MetricsSnapshot& metrics,
                   DemandStep& step) {
  step.surges = SurgeRates(metrics.recent_path_rates_rps, metrics.path_rates_rps,
                           PathDispersions(pipeline, metrics.task_dispersion));
  std::erase_if(step.surges, [&](const auto& path_rate) {  // a router's series of no path here
    return std::ranges::none_of(pipeline.spec.paths,
                                [&](const model::Path& p) { return p.name == path_rate.first; });
  });
  for (const auto& [path, rate] : step.surges) {
    double& planned = step.workload.path_rates_rps[path];
    planned = std::max(planned, rate);
  }
}

// FA2's headroom for what its clients saw (slo_feedback.h), stepped once per interval. A surge's
// misses, or those of capacity still starting, are the reaction's: they raise nothing.
void AddHeadroom(const model::Pipeline& pipeline, const model::MetricsSnapshot& metrics,
                 const std::map<std::string, api::DeploymentView>& deployments, double now,
                 bool advance, DemandStep& step) {
  Headroom& headroom = step.demand.headroom;
  if (!step.surges.empty() || Starting(deployments)) HoldRaises(now, headroom);
  if (advance) headroom = StepHeadroom(pipeline, metrics, now, headroom);
  if (!headroom.paths.empty()) step.without_headroom = step.workload;
  for (const auto& [path, h] : headroom.paths) {
    auto it = step.workload.path_rates_rps.find(path);
    if (it != step.workload.path_rates_rps.end()) it->second *= h.headroom;
  }
}

}  // namespace

std::map<std::string, int> AppliedBatches(const model::AppliedPlan& applied,
                                          const std::map<std::string, int>& running) {
  std::map<std::string, int> out;
  for (const model::TaskPlan& t : applied.plan.tasks) {
    std::string key = optimizer::RunningKey(t.task, t.variant, t.hardware_class);
    if (t.replicas > 0 && running.contains(key)) out[std::move(key)] = t.batch_size;
  }
  return out;
}

size_t SeriesKept(const optimizer::Descriptor& optimizer) {
  if (optimizer.memory.rate_history) return kMaxSeries;
  if (optimizer.memory.burst_allowance || optimizer.memory.window_peak) return kBurstWindow;
  return 0;
}

DemandStep StepDemand(const model::Pipeline& pipeline, const optimizer::Descriptor& optimizer,
                      const Demand& before, const model::MetricsSnapshot& metrics,
                      const std::map<std::string, api::DeploymentView>& deployments, double now) {
  DemandStep step{.workload = {.path_rates_rps = metrics.path_rates_rps,
                               .task_dispersion = metrics.task_dispersion},
                  .input = {},
                  .demand = before};
  const bool advance = before.at == 0 || now - before.at >= pipeline.spec.interval_seconds - 1e-6;
  if (advance) step.demand.at = now;
  if (optimizer.memory.demand_ewma) SmoothRates(advance, before, step);
  if (const size_t keep = SeriesKept(optimizer); advance && keep > 0) {
    ExtendSeries(keep, metrics, step);
  }
  if (optimizer.memory.rate_history) step.input.history = step.demand.series;  // MArk forecasts
  if (optimizer.memory.burst_allowance) AllowForBursts(pipeline, step);
  if (optimizer.memory.window_peak) PeakOverWindow(pipeline, step);
  if (optimizer.memory.rate_history || optimizer.memory.slo_guard ||
      optimizer.memory.holds_running_variants || optimizer.memory.reads_utilization) {
    ReadRunning(pipeline, deployments, step);
  }
  if (optimizer.memory.reads_utilization) step.input.utilization = metrics.utilization;
  if (optimizer.memory.slo_guard) GuardLatePaths(pipeline, metrics, now, step);
  if (optimizer.memory.measured_mix) {
    step.mix = StepMix(pipeline, before.query_mix, metrics.query_sizes, now);
    step.demand.query_mix = step.mix->memory;
  }
  step.profiles = StepProfiles(pipeline, before.profiles, metrics.batch_timings);
  step.demand.profiles = step.profiles.corrections;
  if (optimizer.memory.plans_for_surges) PlanForSurges(pipeline, metrics, step);
  if (optimizer.memory.slo_feedback)
    AddHeadroom(pipeline, metrics, deployments, now, advance, step);
  // After the memory: what is remembered is the load measured, the floor only what is planned.
  step.workload = api::AtLeastMinRate(pipeline, std::move(step.workload));
  if (step.without_headroom) {
    step.without_headroom = api::AtLeastMinRate(pipeline, std::move(*step.without_headroom));
  }
  return step;
}

void UseMeasured(model::Pipeline& pipeline, const optimizer::Descriptor& optimizer,
                 const model::MetricsSnapshot& metrics, const DemandStep& step) {
  if (optimizer.memory.measured_factors) {
    for (auto& task : pipeline.spec.tasks) {
      for (auto& v : task.variants) {
        auto it = metrics.multiplicative_factors.find(task.name + "/" + v.name);
        // Within the range the spec itself may state: a Prometheus answer is outside input.
        if (it != metrics.multiplicative_factors.end() && it->second > 0) {
          v.multiplicative_factor = std::min(it->second, limits::kMaxRatio);
        }
      }
    }
  }
  if (step.mix) pipeline.spec.query_sizes = step.mix->planned;
  UseCorrections(pipeline, step.profiles.corrections);
}

}  // namespace pipescale::reconciler
