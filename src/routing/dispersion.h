// How bursty a task's arrivals are, as the tail model reads it: the index of dispersion of its
// per-second arrival counts (variance over mean; 1 for Poisson arrivals). Queues grow with it
// (Kingman's (c_a^2 + c_s^2) / 2), so a plan sized for Poisson arrivals runs late under a real
// trace's second-to-second bursts. Written once for the router (which measures it) and the
// simulator. Pure.
#pragma once

#include <span>

namespace pipescale::routing {

// The complete seconds of arrivals the index is measured over.
inline constexpr int kDispersionWindowSeconds = 120;

// The index of dispersion of `counts` (arrivals in consecutive seconds, oldest first), beyond
// what counting noise would show on Poisson arrivals: 1 when the counts are as regular as Poisson
// arrivals' or too few to say (fewer than two seconds, or no arrival), at most
// limits::kMaxDispersion. The seconds before the first arrival are left out: a task whose load
// has just begun has not been bursty, it has started.
//
// Measured on successive differences, sum (N[i+1] - N[i])^2 / sum (N[i] + N[i+1]), which is 1 in
// expectation for Poisson arrivals at any steady rate and is not moved by a rate that drifts over
// minutes (the plan follows that; what it cannot follow is the second-to-second lumps). Two
// standard errors of that estimate on Poisson counts, sqrt((3 + 1 / (2 mean)) / differences), are
// taken off before it counts, so a steady load never buys capacity for its own noise.
double ArrivalDispersion(std::span<const double> counts);

}  // namespace pipescale::routing
