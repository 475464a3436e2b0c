#include "reconciler/idle.h"

#include <algorithm>
#include <vector>

#include "reconciler/wake_ahead.h"

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

// Whether quiet `path` (index `i` of PathNames) sleeps: after afterIdleSeconds, unless it is awake
// ahead of a forecast return, or one wakes it now.
bool Sleeps(const model::Pipeline& pipeline, const SleepMemory& before, const std::string& path,
            size_t i, double quiet_since, double now, Sleep& out) {
  const model::ScaleToZero& rule = *pipeline.spec.scale_to_zero;
  if (now - quiet_since < rule.after_idle_seconds) return false;
  if (const auto ahead = before.awake_ahead.find(path); ahead != before.awake_ahead.end()) {
    // A forecast's window lasts at most the wake's lead and twice the tolerance from when it is
    // made (ForecastReturn). One with more left is none of this rule's (a status edited by hand,
    // or a period since shortened): it keeps nothing awake, and no forecast missed.
    const double left = ahead->second.until - now;
    const double longest = pipeline.WakeSeconds(i) + 2 * rule.wake_ahead.ToleranceSeconds();
    if (left > 0 && left <= longest) {
      out.memory.awake_ahead.insert(*ahead);
      return false;
    }
    if (left <= 0) out.forecast_missed.insert(path);
  }
  const auto returns = before.returns.find(path);
  if (returns == before.returns.end()) return true;
  const auto forecast =
      ForecastReturn(returns->second, rule.wake_ahead, pipeline.WakeSeconds(i), now);
  if (!forecast) return true;
  out.memory.awake_ahead[path] = *forecast;
  out.woke_ahead.insert(path);
  out.forecast_missed.erase(path);
  return false;
}

std::optional<double> LookAfter(const Sleep& s, double next_sleep, double now) {
  if (!s.memory.sleeping_paths.empty()) return kSleepingLookSeconds;
  for (const auto& [path, w] : s.memory.awake_ahead) {
    const double left = w.until - now;
    next_sleep = next_sleep < 0 ? left : std::min(next_sleep, left);
  }
  if (next_sleep < 0) return std::nullopt;
  return std::max(next_sleep, kMinLookSeconds);
}

}  // namespace

Sleep JudgeSleep(const model::Pipeline& pipeline, const model::MetricsSnapshot& metrics,
                 const SleepMemory& before, double now, bool new_pipeline) {
  const model::ScaleToZero& rule = *pipeline.spec.scale_to_zero;
  Sleep out;
  out.memory.returns = before.returns;
  for (const auto& [path, n] : metrics.door_waiting) {
    if (n <= 0) continue;
    const auto since = before.held_since.find(path);
    out.memory.held_since[path] =
        since == before.held_since.end() ? now : std::min(since->second, now);
  }
  std::set<std::string> awake;
  double next_sleep = -1;
  const std::vector<std::string> paths = PathNames(pipeline);
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    if (!Quiet(pipeline, metrics, path)) {
      awake.insert(path);
      if (before.sleeping_paths.contains(path) || before.awake_ahead.contains(path)) {
        NoteReturn(out.memory.returns[path], rule.wake_ahead, now);
      }
      continue;
    }
    const auto quiet = before.quiet_since.find(path);
    // A time from a clock ahead of this one is read as now: never as quiet for longer.
    const double first = new_pipeline ? now - rule.after_idle_seconds : now;
    const double since = quiet == before.quiet_since.end() ? first : std::min(quiet->second, now);
    out.memory.quiet_since[path] = since;
    if (Sleeps(pipeline, before, path, i, since, now, out)) {
      out.memory.sleeping_paths.insert(path);
      continue;
    }
    awake.insert(path);
    const double left = since + rule.after_idle_seconds - now;
    if (left > 0) next_sleep = next_sleep < 0 ? left : std::min(next_sleep, left);
  }
  if (rule.wake == model::WakeScope::kPipeline && !awake.empty()) {
    out.memory.sleeping_paths.clear();
    awake.insert(paths.begin(), paths.end());
  }
  out.sleeping_tasks = SleepingTasks(pipeline, awake);
  out.idle = out.sleeping_tasks.size() == pipeline.spec.tasks.size();
  out.look_after_seconds = LookAfter(out, next_sleep, now);
  return out;
}

bool DoorWatched(const model::Pipeline& pipeline, const model::PipelineStatus& status) {
  return pipeline.spec.scale_to_zero && pipeline.spec.router && status.memory &&
         !status.memory->sleeping_paths.empty();
}

bool WakesNow(const model::Pipeline& pipeline, const model::PipelineStatus& status,
              const std::map<std::string, double>& held) {
  if (!DoorWatched(pipeline, status)) return false;
  const std::vector<std::string>& sleeping = status.memory->sleeping_paths;
  return std::ranges::any_of(held, [&](const auto& path_held) {
    const auto& [path, n] = path_held;
    return n > 0 && (path.empty() || std::ranges::find(sleeping, path) != sleeping.end());
  });
}

std::map<std::string, double> PlannedRates(const model::Pipeline& pipeline,
                                           const model::MetricsSnapshot& metrics,
                                           const SleepMemory& sleep, double now) {
  std::map<std::string, double> out = metrics.path_rates_rps;
  for (const auto& [path, w] : sleep.awake_ahead) {
    if (!path.empty()) out[path] = std::max(Rate(out, path), w.rate_rps);
  }
  if (metrics.door_waiting.empty()) return out;
  // Held requests per second of holding, for a path (or "").
  const auto held_rate = [&](const std::string& path) {
    const auto since = sleep.held_since.find(path);
    const double span = since == sleep.held_since.end()
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

void NoteReturnRates(const model::Pipeline& pipeline, const std::map<std::string, double>& rates,
                     const model::MetricsSnapshot& metrics, double now, SleepMemory& sleep) {
  for (auto& [path, returns] : sleep.returns) {
    const double rate =
        pipeline.spec.paths.empty() ? metrics.arrival_rate_rps.value_or(0) : Rate(rates, path);
    NoteReturnRate(returns, rate, now);
  }
}

}  // namespace pipescale::reconciler
