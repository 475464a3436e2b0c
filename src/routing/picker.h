// Which model pod gets a request: the one that would finish it first (the batches it would then
// hold, per unit of planned capacity) over all of a task's pods, however many: join the shortest
// queue, which the planners' tail model assumes (optimizer/tail.h). Among those, the one whose
// batch is fullest, so a server's batch fills at the task's whole rate rather than at its share
// of it. Not the power of two choices past some count (Ray Serve's and Envoy's): the caller has
// every pod's load in hand already, and at a plan's utilisation two draws of 43 pods send
// batches to busy pods while others idle (bench/README.md, "One queue for every pod"). Pure: the
// caller passes the randomness.
#pragma once

#include <cstddef>
#include <span>

namespace pipescale::routing {

struct Candidate {
  double weight = 1;    // the pod's planned capacity (requests per second), > 0
  int outstanding = 0;  // requests sent to it and not yet answered
  int batch = 1;        // the batch size its server forms
};

// The index of the chosen candidate, or -1 when there is none. `u`, uniform in [0, 1), breaks a
// tie among the least loaded by weight.
int PickPod(std::span<const Candidate> candidates, double u);

}  // namespace pipescale::routing
