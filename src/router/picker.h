// Which model pod gets a request: the power of two choices (as Ray Serve and Envoy's least
// request balancer do), drawn in proportion to each pod's planned capacity and settled by the
// fewest requests outstanding per unit of capacity. Pure: the caller passes the randomness.
#pragma once

#include <span>

namespace pipescale::router {

struct Candidate {
  double weight = 1;    // the pod's planned capacity (requests per second), > 0
  int outstanding = 0;  // requests sent to it and not yet answered
};

// The index of the chosen candidate, or -1 when there is none. `u1` and `u2` are uniform in
// [0, 1): the first draws one candidate by weight, the second another among the rest.
int PickOfTwo(std::span<const Candidate> candidates, double u1, double u2);

}  // namespace pipescale::router
