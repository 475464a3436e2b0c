// The HPA's stabilization windows: a scale-down waits until no recommendation within its window
// asked for more, a scale-up goes no further than the lowest recommendation within its window.
// The recommendations are a step function, kept in the status so that a new leader honours them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/pipeline.h"
#include "model/status.h"

namespace pipescale::reconciler {

// One step of the recommendations (status.memory.recommendations). A step only starts when the
// recommendation changes, so steady reconciles leave the history, and the status that keeps it,
// as they were.
using model::Recommendation;

// Steps kept at most; beyond it the two oldest merge, keeping the larger of each (which can only
// make a scale-down wait longer).
using model::kMaxRecommendations;

// The replicas to set for Deployment `name`, from `desired`, what it has now (`current`;
// nullopt: not created yet, so no window applies) and the steps in `history`.
int Stabilize(const std::vector<Recommendation>& history, const std::string& name, int desired,
              std::optional<int> current, const model::Behavior& behavior, double now);

// Records `now` as the current step (a new step only if it differs from the last) and drops the
// steps that ended before both windows.
void Remember(std::vector<Recommendation>& history, Recommendation now,
              const model::Behavior& behavior);

}  // namespace pipescale::reconciler
