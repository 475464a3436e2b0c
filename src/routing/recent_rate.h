// Each path's arrival rate over the last few complete seconds, as the router measures it: the
// first sign of a burst, seconds before Prometheus's rate windows (10 s and 30 s of answered
// requests) show it. The operator's surge rule (reconciler/surge.h) plans for it where it is
// beyond counting noise. Written once for the router and the simulator. Pure.
#pragma once

#include <span>

namespace pipescale::routing {

// As Knative's panic window is a tenth of its stable one: 2 s against the 10 s and 30 s windows,
// and the routers' scrape every 2 s reads a full one.
inline constexpr int kRecentRateSeconds = 2;

// Requests per second over `counts` (arrivals in consecutive complete seconds); 0 for none.
double RecentRate(std::span<const double> counts);

}  // namespace pipescale::routing
