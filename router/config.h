// What every router thread shares: the pipeline's name, its current routing table, the walk's
// policy and the limits, fixed after start but for the atomics.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "model/pipeline.h"
#include "routing/walk.h"
#include "routing_table.h"

namespace pipescale::router {

struct RouterConfig {
  std::string pipeline, namespace_name;
  std::atomic<std::shared_ptr<const RoutingTable>> table;  // null until the pipeline is known
  routing::Policy policy;  // the door, the spill, Loki's drops, the grace and the timeout
  // The baseline Kairos's matching is measured against: first come, first served.
  bool fcfs = false;
  int max_in_flight = 4096;
  std::atomic<int> in_flight{0};
  // Set at SIGTERM: the router still serves, but says it is not ready and closes each
  // connection after its answer, so clients move to another replica while nothing is lost.
  std::atomic<bool> draining{false};
  // Whether the table follows the pods (discovery), so a newer one may bring a pod a visit
  // waits for; not with --endpoints, where the pods are fixed.
  bool pods_follow = true;
  // A request body past this is answered 413 before the rest is read.
  size_t max_body_bytes = model::RouterSpec{}.max_body_bytes;
};

}  // namespace pipescale::router
