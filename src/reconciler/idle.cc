#include "reconciler/idle.h"

#include <algorithm>
#include <vector>

namespace pipescale::reconciler {
namespace {

// A held request counts as one over this window, the short one of the pathRate query
// (metrics/source.cc), as it would once answered.
constexpr double kHeldWindowSeconds = 10;
// What passes between a request joining the door's queue and a look that reads it: the router's
// scrape and the operator's look, a second each at most, half that on average.
constexpr double kSeenLagSeconds = 1;
constexpr double kMinLookSeconds = 0.5;

double Held(const model::MetricsSnapshot& m, const std::string& path) {
  const auto it = m.door_waiting.find(path);
  return it == m.door_waiting.end() ? 0 : it->second;
}

double Rate(const std::map<std::string, double>& rates, const std::string& path) {
  const auto it = rates.find(path);
  return it == rates.end() ? 0 : it->second;
}

// The paths the rule judges: the spec's, or "" for a pipeline without.
std::vector<std::string> PathNames(const model::Pipeline& pipeline) {
  std::vector<std::string> out;
  for (const model::Path& p : pipeline.spec.paths) out.push_back(p.name);
  if (out.empty()) out.emplace_back();
  return out;
}

bool Quiet(const model::Pipeline& pipeline, const model::MetricsSnapshot& m,
           const std::string& path) {
  double held = Held(m, path);
  if (!path.empty()) held += Held(m, "");  // a request naming no path may take any
  const double rate =
      pipeline.spec.paths.empty() ? m.arrival_rate_rps.value_or(0) : Rate(m.path_rates_rps, path);
  return rate <= 0 && held <= 0;
}

// Tasks on no path sleep only when every path does.
std::set<std::string> SleepingTasks(const model::Pipeline& pipeline,
                                    const std::set<std::string>& awake_paths) {
  std::set<std::string> out;
  const bool all_asleep = awake_paths.empty();
  for (const model::Task& t : pipeline.spec.tasks) {
    bool on_a_path = false, needed = false;
    for (const model::Path& p : pipeline.spec.paths) {
      if (std::ranges::find(p.tasks, t.name) == p.tasks.end()) continue;
      on_a_path = true;
      needed = needed || awake_paths.contains(p.name);
    }
    if (on_a_path ? !needed : all_asleep) out.insert(t.name);
  }
  return out;
}

}  // namespace

Sleep JudgeSleep(const model::Pipeline& pipeline, const model::MetricsSnapshot& metrics,
                 const std::map<std::string, double>& quiet_before,
                 const std::map<std::string, double>& held_before, double now) {
  const model::ScaleToZero& rule = *pipeline.spec.scale_to_zero;
  Sleep out;
  for (const auto& [path, n] : metrics.door_waiting) {
    if (n <= 0) continue;
    const auto before = held_before.find(path);
    out.held_since[path] = before == held_before.end() ? now : std::min(before->second, now);
  }
  std::set<std::string> awake;
  double next_sleep = -1;
  for (const std::string& path : PathNames(pipeline)) {
    if (!Quiet(pipeline, metrics, path)) {
      awake.insert(path);
      continue;
    }
    const auto before = quiet_before.find(path);
    // A time from a clock ahead of this one is read as now: never as quiet for longer.
    const double since = before == quiet_before.end() ? now : std::min(before->second, now);
    out.quiet_since[path] = since;
    if (now - since >= rule.after_idle_seconds) {
      out.sleeping_paths.insert(path);
    } else {
      awake.insert(path);
      const double left = since + rule.after_idle_seconds - now;
      next_sleep = next_sleep < 0 ? left : std::min(next_sleep, left);
    }
  }
  if (rule.wake == model::WakeScope::kPipeline && !awake.empty()) {
    out.sleeping_paths.clear();
    for (const std::string& path : PathNames(pipeline)) awake.insert(path);
  }
  out.sleeping_tasks = SleepingTasks(pipeline, awake);
  out.idle = out.sleeping_tasks.size() == pipeline.spec.tasks.size();
  if (!out.sleeping_paths.empty()) {
    out.look_after_seconds = kSleepingLookSeconds;
  } else if (next_sleep >= 0) {
    out.look_after_seconds = std::max(next_sleep, kMinLookSeconds);
  }
  return out;
}

std::map<std::string, double> RatesWithHeld(const model::Pipeline& pipeline,
                                            const model::MetricsSnapshot& metrics,
                                            const std::map<std::string, double>& held_since,
                                            double now) {
  std::map<std::string, double> out = metrics.path_rates_rps;
  if (metrics.door_waiting.empty()) return out;
  // Held requests per second of holding, for a path (or "").
  const auto held_rate = [&](const std::string& path) {
    const auto since = held_since.find(path);
    const double span = since == held_since.end()
                            ? kHeldWindowSeconds
                            : std::max(0.0, now - since->second) + kSeenLagSeconds;
    return Held(metrics, path) / span;
  };
  const double unnamed = held_rate("");
  double weights = 0;
  for (const model::Path& p : pipeline.spec.paths) weights += p.weight;
  for (const model::Path& p : pipeline.spec.paths) {
    // Requests naming no path spread over the paths by weight, as spec.minRate is.
    const double share = weights > 0 ? p.weight / weights : 0;
    const double held = held_rate(p.name) + unnamed * share;
    if (held > 0) out[p.name] = Rate(out, p.name) + held;
  }
  return out;
}

}  // namespace pipescale::reconciler
