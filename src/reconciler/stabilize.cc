#include "reconciler/stabilize.h"

#include <algorithm>

namespace pipescale::reconciler {
namespace {

// When step `i` of `history` ended; the last step lasts until now.
double EndOf(const std::vector<Recommendation>& history, size_t i, double now) {
  return i + 1 < history.size() ? history[i + 1].since : now;
}

void MergeOldestTwo(std::vector<Recommendation>& history) {
  Recommendation& first = history[0];
  for (const auto& [name, replicas] : history[1].replicas) {
    int& kept = first.replicas[name];
    kept = std::max(kept, replicas);
  }
  history.erase(history.begin() + 1);
}

}  // namespace

int Stabilize(const std::vector<Recommendation>& history, const std::string& name, int desired,
              std::optional<int> current, const model::Behavior& behavior, double now) {
  if (!current || desired == *current) return desired;
  const bool up = desired > *current;
  const double window = up ? behavior.scale_up_window_seconds : behavior.scale_down_window_seconds;
  int bound = desired;
  for (size_t i = 0; i < history.size(); ++i) {
    if (i + 1 < history.size() && EndOf(history, i, now) <= now - window) continue;
    auto it = history[i].replicas.find(name);
    if (it == history[i].replicas.end()) continue;
    bound = up ? std::min(bound, it->second) : std::max(bound, it->second);
  }
  return up ? std::max(*current, bound) : std::min(*current, bound);
}

void Remember(std::vector<Recommendation>& history, Recommendation now,
              const model::Behavior& behavior) {
  const double at = now.since;
  if (history.empty() || history.back().replicas != now.replicas) {
    history.push_back(std::move(now));
  }
  const double keep =
      std::max(behavior.scale_down_window_seconds, behavior.scale_up_window_seconds);
  while (history.size() > 1 && history[1].since <= at - keep) history.erase(history.begin());
  while (history.size() > kMaxRecommendations) MergeOldestTwo(history);
}

}  // namespace pipescale::reconciler
