// FA2's feedback on what the clients saw: a path that left more than 1% of its requests of the
// last minute unanswered (refused at the door, past the deadline, failed) is planned for more
// than its measured rate, by a headroom that grows at each miss and falls back while the path
// meets its SLO. The tail model holds a plan to the SLO for the arrivals it counts; real traces
// swing over tens of seconds and queue where the model says they would not. Pure.
#pragma once

#include <map>
#include <string>

#include "model/metrics_snapshot.h"
#include "model/pipeline.h"
#include "model/status.h"

namespace pipescale::reconciler {

// A miss multiplies the path's headroom by 1 plus the share it left unanswered, within
// [kMinStep, kMaxStep].
inline constexpr double kMinStep = 0.05;
inline constexpr double kMaxStep = 0.5;
inline constexpr double kMaxHeadroom = 2;               // at most twice the measured rate
inline constexpr double kHeadroomFallPerMinute = 0.05;  // while the path meets its SLO
inline constexpr double kMissedShare = 0.01;            // unanswered past this is a miss
// The window the clients' outcomes are counted over (metrics' pathErrorShare).
inline constexpr double kFeedbackWindowSeconds = 60;

using model::Headroom;

// How far `path`'s clients saw its SLO missed over the last window: 0 where no more than
// kMissedShare of its requests went unanswered, else that share. (The p99 of the answered ones
// is read from coarse histogram buckets: interpolated within one, it sat 12% past a text-qa SLO
// that 99.5% of the requests met, and raised the headroom at every look.)
double MissedBy(const model::Path& path, const model::MetricsSnapshot& metrics);
bool PathMissed(const model::Path& path, const model::MetricsSnapshot& metrics);

// One interval's step at `now`: each missed path's headroom multiplied by 1 plus its miss (once
// per quiet time, which lasts until the added capacity has started and filled the window; a
// larger miss within it takes the larger raise), each other path's falling towards 1.
Headroom StepHeadroom(const model::Pipeline& pipeline, const model::MetricsSnapshot& metrics,
                      double now, const Headroom& before);

// Misses at `now` are not the model's: a surge's or those of capacity still starting (the
// reaction's), or a full cluster's. No raise until the window has passed them (extended at most
// every half window, so a surge's reconciles every few seconds do not each rewrite the status).
void HoldRaises(double now, Headroom& headroom);

// Every path of `spec` with the headroom its measured rate is planned times (1 where none was
// raised): what the operator exports as pipescale_path_headroom.
std::map<std::string, double> HeadroomByPath(const model::PipelineSpec& spec,
                                             const Headroom& headroom);

}  // namespace pipescale::reconciler
