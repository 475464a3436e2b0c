// The requests held at the routers' doors, read from the routers themselves. A request held for
// a sleeping path is what wakes it; read through Prometheus, the wake also waited for its next
// scrape of the routers (a second on the box, 15-30 s in many clusters) on top of the start-up.
// Knative's autoscaler reads its activators and pods directly for the same reason.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace pipescale::metrics {

// The router's gauge of requests held at its door, by path.
inline constexpr std::string_view kDoorWaitingMetric = "pipescale_router_door_waiting_requests";

// The samples of kDoorWaitingMetric in a Prometheus text exposition, summed by their `path`
// label ("" for a sample without one). A line that does not read as such a sample is passed
// over: the text comes from another process.
std::map<std::string, double> DoorWaitingIn(std::string_view exposition);

// The held requests by path at the routers whose expositions are at `urls` (the whole one at
// /metrics, or the door's alone at api::kRouterDoorPath), summed over them. A router that does
// not answer within a short timeout is left out; an error only when none of them answered (or
// there are none).
Result<std::map<std::string, double>> ReadDoorWaiting(const std::vector<std::string>& urls);

}  // namespace pipescale::metrics
