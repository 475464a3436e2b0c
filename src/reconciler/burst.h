// Capacity for the load that comes before new pods can serve. A plan made for the rate just
// measured runs its pods near full, and for a start-up time and an interval the load can rise
// past it before more replicas are Ready: the door then refuses what the queues would make late.
// An optimizer whose descriptor asks (memory.burst_allowance) plans each path for its rate plus
// how far that rate has been seen to rise over such a lead time (spec.behavior.scaleUp's
// burstAllowance: how many root-mean-square rises; 0 turns it off). Pure.
#pragma once

#include <span>

#include "model/pipeline.h"

namespace pipescale::reconciler {

// Per-interval rates the allowance reads: five minutes at the default 10 s interval.
inline constexpr size_t kBurstWindow = 30;
// Changes measured before any rise is planned for. Fewer say nothing; more leave a pipeline's
// first minutes without the allowance, when a load that has just arrived ramps on: with 10,
// FA2's worst path on Azure's conversation trace at 10x kept 97.9% where 3 keeps 98.9% (a ramp
// from idle then weighs more for five minutes: a step from 0 to 10 requests/s ran twice the
// replicas in a test chain).
inline constexpr size_t kBurstMinRises = 3;
// The shortest window the measured rate is counted over (metrics/source.cc's rate[10s]). A steady
// Poisson load of lambda counted over it moves between two counts by lambda / W in mean square of
// its rises alone: counting noise, not a burst, and at a pipeline's own rates most of what the
// rises held (at 17.5/s, 19% of the rate planned for nothing).
inline constexpr double kRateWindowSeconds = 10;

// Intervals between a rise and the replicas it asks for being Ready: the interval (the plan's
// next look) plus the slowest class's start-up, in whole intervals, at least 1.
int LeadIntervals(const model::PipelineSpec& spec);

// The rate to plan a path for: `measured` plus `allowance` times the root mean square of the rise
// of its per-interval rate over `lead` intervals (a fall is a rise of 0), over the last
// kBurstWindow rates of `series` (oldest first), less the counting noise of their mean rate
// (the mean square less mean / kRateWindowSeconds, at least 0); `measured` itself while the
// series holds fewer than kBurstMinRises rises. Finite for finite rates, however large.
double BurstRate(std::span<const double> series, double measured, int lead, double allowance);

}  // namespace pipescale::reconciler
