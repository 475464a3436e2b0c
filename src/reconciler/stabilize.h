// The HPA's stabilization windows: a scale-down waits until no recommendation within its window
// asked for more, a scale-up goes no further than the lowest recommendation within its window.
// The recommendations are a step function, kept in the status so that a new leader honours them.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/pipeline.h"

namespace pipescale::reconciler {

// One step of the recommendations: replicas per Deployment name from `since` until the next
// step's `since` (the last step lasts until now). A step only starts when the recommendation
// changes, so steady reconciles leave the history, and the status that keeps it, as they were.
struct Recommendation {
  double since = 0;  // unix seconds
  std::map<std::string, int> replicas;

  bool operator==(const Recommendation&) const = default;
};

// Steps kept at most; beyond it the two oldest merge, keeping the larger of each (which can only
// make a scale-down wait longer).
inline constexpr size_t kMaxRecommendations = 32;

// The replicas to set for Deployment `name`, from `desired`, what it has now (`current`;
// nullopt: not created yet, so no window applies) and the steps in `history`.
int Stabilize(const std::vector<Recommendation>& history, const std::string& name, int desired,
              std::optional<int> current, const model::Behavior& behavior, double now);

// Records `now` as the current step (a new step only if it differs from the last) and drops the
// steps that ended before both windows.
void Remember(std::vector<Recommendation>& history, Recommendation now,
              const model::Behavior& behavior);

// status.memory.recommendations and back; what cannot be read is left out.
nlohmann::json RecommendationsToJson(const std::vector<Recommendation>& history);
std::vector<Recommendation> RecommendationsFromJson(const nlohmann::json& steps);

}  // namespace pipescale::reconciler
