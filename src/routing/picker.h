// Which model pod gets a request: the one that would finish it first (the batches it would then
// hold, per unit of planned capacity) over all of a task's pods: join the shortest queue, which
// the planners' tail model assumes (optimizer/tail.h). Among those, the one whose batch is
// fullest, so a server's batch fills at the task's whole rate rather than at its share of it.
// Past kScanAll pods the power of two choices (as Ray Serve and Envoy's least request balancer
// do), where scanning every pod would cost more than it saves. Pure: the caller passes the
// randomness.
#pragma once

#include <cstddef>
#include <span>

namespace pipescale::routing {

struct Candidate {
  double weight = 1;    // the pod's planned capacity (requests per second), > 0
  int outstanding = 0;  // requests sent to it and not yet answered
  int batch = 1;        // the batch size its server forms
};

inline constexpr size_t kScanAll = 32;

// The index of the chosen candidate, or -1 when there is none. `u1` and `u2` are uniform in
// [0, 1): up to kScanAll candidates, `u1` breaks a tie among the least loaded by weight; past
// it, PickOfTwo.
int PickPod(std::span<const Candidate> candidates, double u1, double u2);

// The power of two choices: `u1` draws one candidate by weight, `u2` another among the rest, and
// the one with fewer requests outstanding per unit of capacity wins.
int PickOfTwo(std::span<const Candidate> candidates, double u1, double u2);

}  // namespace pipescale::routing
