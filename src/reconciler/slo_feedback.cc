#include "reconciler/slo_feedback.h"

#include <algorithm>
#include <cmath>

#include "optimizer/pool.h"

namespace pipescale::reconciler {

double MissedBy(const model::Path& path, const model::MetricsSnapshot& metrics) {
  const auto errors = metrics.path_error_share.find(path.name);
  if (errors == metrics.path_error_share.end() || !(errors->second > kMissedShare)) return 0;
  return std::min(errors->second, 1.0);
}

bool PathMissed(const model::Path& path, const model::MetricsSnapshot& metrics) {
  return MissedBy(path, metrics) > 0;
}

namespace {

// One path's step on a miss of `by` (0: met); true where it was raised.
bool StepPath(double by, double fall, const Headroom& before, double now, model::PathHeadroom& h) {
  if (!(h.headroom >= 1) || !std::isfinite(h.headroom)) h.headroom = 1;  // a stored value
  if (!(h.raised_from >= 1) || !std::isfinite(h.raised_from)) h.raised_from = 1;
  if (by <= 0) {
    h.headroom = std::max(1.0, h.headroom - fall);
    return false;
  }
  if (now < before.held_until) return false;
  const double step = 1 + std::clamp(by, kMinStep, kMaxStep);
  if (now < before.quiet_until) {  // the first look at a burst sees only its start
    h.headroom = std::max(h.headroom, std::min(kMaxHeadroom, h.raised_from * step));
    return false;
  }
  h.raised_from = h.headroom;
  h.headroom = std::min(kMaxHeadroom, h.headroom * step);
  return true;
}

}  // namespace

Headroom StepHeadroom(const model::Pipeline& pipeline, const model::MetricsSnapshot& metrics,
                      double now, const Headroom& before) {
  Headroom out{.paths = {}, .quiet_until = before.quiet_until, .held_until = before.held_until};
  const double fall = kHeadroomFallPerMinute * pipeline.spec.interval_seconds / 60;
  bool raised = false;
  for (const model::Path& path : pipeline.spec.paths) {
    model::PathHeadroom& h = out.paths[path.name];
    if (auto was = before.paths.find(path.name); was != before.paths.end()) h = was->second;
    raised = StepPath(MissedBy(path, metrics), fall, before, now, h) || raised;
  }
  std::erase_if(out.paths, [](const auto& p) { return p.second.headroom <= 1; });
  if (raised) {
    out.quiet_until = now + kFeedbackWindowSeconds + pipeline.spec.interval_seconds +
                      optimizer::SlowestStartupSeconds(pipeline.spec);
  }
  return out;
}

void HoldRaises(double now, Headroom& headroom) {
  if (headroom.held_until < now + kFeedbackWindowSeconds / 2) {
    headroom.held_until = now + kFeedbackWindowSeconds;
  }
}

std::map<std::string, double> HeadroomByPath(const model::PipelineSpec& spec,
                                             const Headroom& headroom) {
  std::map<std::string, double> out;
  for (const model::Path& path : spec.paths) {
    const auto it = headroom.paths.find(path.name);
    out[path.name] = it == headroom.paths.end() ? 1 : it->second.headroom;
  }
  return out;
}

}  // namespace pipescale::reconciler
