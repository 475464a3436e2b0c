#include "reconciler/surge.h"

#include <algorithm>
#include <cmath>

#include "model/limits.h"
#include "optimizer/registry.h"
#include "routing/recent_rate.h"

namespace pipescale::reconciler {
namespace {

bool Counts(double rate) { return std::isfinite(rate) && rate >= 0; }

double At(const std::map<std::string, double>& by, const std::string& key, double absent) {
  const auto it = by.find(key);
  return it == by.end() ? absent : it->second;
}

}  // namespace

std::map<std::string, double> SurgeRates(const std::map<std::string, double>& recent,
                                         const std::map<std::string, double>& measured,
                                         const std::map<std::string, double>& dispersion) {
  constexpr double kWindow = routing::kRecentRateSeconds;
  std::map<std::string, double> out;
  for (const auto& [path, rate] : recent) {
    double was = At(measured, path, 0);
    if (!Counts(was)) was = 0;
    if (!Counts(rate) || rate <= kSurgeRatio * was) continue;
    double index = At(dispersion, path, 1);
    index = index >= 1 ? std::min(index, limits::kMaxDispersion) : 1;  // NaN too
    const double expected = was * kWindow;
    const double noise = kSurgeDeviations * std::sqrt(index * expected) + kSurgeFloor;
    if (rate * kWindow > expected + noise) {
      out[path] = rate;
    }
  }
  return out;
}

bool SurgeWatched(const model::Pipeline& pipeline, const model::PipelineStatus& status) {
  return optimizer::OptimizerOf(pipeline.spec).memory.plans_for_surges && pipeline.spec.router &&
         status.observed;
}

bool Surging(const model::Pipeline& pipeline, const model::PipelineStatus& status,
             const std::map<std::string, double>& recent) {
  return SurgeWatched(pipeline, status) &&
         !SurgeRates(recent, status.observed->path_rates_rps).empty();
}

std::map<std::string, double> PathDispersions(const model::Pipeline& pipeline,
                                              const std::map<std::string, double>& by_task) {
  std::map<std::string, double> out;
  for (const model::Path& path : pipeline.spec.paths) {
    double index = 1;
    for (const std::string& task : path.tasks) {
      const double d = At(by_task, task, 1);
      if (std::isfinite(d)) index = std::max(index, d);  // NaN, never the largest
    }
    out[path.name] = std::min(index, limits::kMaxDispersion);
  }
  return out;
}

}  // namespace pipescale::reconciler
