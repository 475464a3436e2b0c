// What an answered call says of d(b), the service time of a batch on its pod's class: the
// router's measure of the profiles the planners use (pipescale_router_batch_service_seconds).
// Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "model/limits.h"

namespace pipescale::routing {

// Batch rows past the largest batch a spec may declare: a call naming more is not recorded, so a
// hostile or broken answer cannot mint series without bound.
inline constexpr int kMaxBatchRows = limits::kMaxBatch;

// What the router knows of one call it sent, besides its answer.
struct CallFacts {
  std::string hardware_class;  // the pod's class ("" when not known)
  int rows = 0;                // rows sent: the request's, or the whole batch the router formed
  // The pod's server forms batches itself (its batch > 1; a pod whose batches the router forms
  // serves each alone).
  bool pod_batches = false;
  bool pod_was_idle = false;  // no other call was outstanding at the pod when it was sent
};

// One batch's service time on a pod of the call's class: d(rows) as measured.
struct BatchSample {
  int rows = 0;
  double seconds = 0;
};

// What an answered call (`seconds` from sent to answered, its answer's `parameters`) says of d(b)
// on its pod's class, or nullopt when it says nothing sure:
//  - rows: the answer's kBatchRowsParameter (a whole number above 0); else, when the pod does
//    not batch, the rows sent; else nothing (a server batch of unknown size names no d(b)).
//    Rows past kMaxBatchRows: nothing (dropped, not clamped, so no series holds another size's
//    times).
//  - service: the call past the queue time the answer reports (kQueueParameter); else, when the
//    pod does not batch and had no other call outstanding (as this router counts: another
//    replica's calls are not seen), the whole call, which cannot have queued; else nothing.
//  - a pod of no known class: nothing (a profile is per class).
// The router's own waits (a batch filling in its batcher, Kairos's queue) come before the call is
// sent, so are never in it. A batch the router formed is one call, measured once; the calls of a
// batch its server formed are each a sample of it (the router cannot tell which calls shared
// it), so there the count is calls, the mean the same.
std::optional<BatchSample> BatchServiceSample(const CallFacts& call, double seconds,
                                              const nlohmann::json& parameters);

}  // namespace pipescale::routing
