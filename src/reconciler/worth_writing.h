// When a decided status is worth a write: measurements (rates, predicted latencies, shares) move
// a little at every look, and writing each move would cost the apiserver a status write per
// pipeline per interval (at 2000 pipelines, more CPU than the apiserver had).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace pipescale::reconciler {

// A measurement moved enough to rewrite when it differs from the written value by more than this
// share of the larger, and by more than kStatusJitterFloor (so values near zero are not
// rewritten for a change no one reads).
inline constexpr double kStatusJitter = 0.1;
inline constexpr double kStatusJitterFloor = 0.01;

// True when a measurement `decided` moved from `written` by more than the jitter above: what a
// status write carries, and so what any rule comparing a measurement with the status may react to.
bool MeasurementMoved(double written, double decided);

// True for the key of one of the plan's predictions for the rates written beside it (a task's
// queueMs, a path's predictedLatencyMs): they go out with a rate or a plan that moved, so the
// status shows one prediction for the rate it shows, and never on their own.
bool IsPrediction(std::string_view key);

// True for the key of a sentence that describes the numbers beside it (a condition's message:
// "the SLOs need 3 replicas and it allows 0 now"; a waiting Deployment's scheduler message, whose
// pod count is a field of its own): one that differs only in its numbers goes out
// with a rate or a plan that moved, never on its own (across a replica boundary it flips at
// every look of a rate that moved 1%).
bool IsDescription(std::string_view key);

// True when `written` and `decided` read the same with every number masked.
bool SameWords(std::string_view written, std::string_view decided);

// True when `decided` (a status in its JSON form) says something `written` (the status the
// server holds) does not: a key, a string, a bool, an integer or an array's length differs, or
// a floating-point number moved by more than the jitter above. Predictions are not compared, and
// descriptions are compared with their numbers masked.
// status.memory compares exactly: it is what a new leader resumes from, timestamps included.
bool WorthWriting(const nlohmann::json& written, const nlohmann::json& decided);

}  // namespace pipescale::reconciler
