// Reading a compiled FA2 problem in tests: the choice a running (batch, replicas) stands for, and
// whether an assignment keeps the SLOs within a band.
#pragma once

#include "optimizer/problem.h"

namespace pipescale::testing {

// Task `dnn` at batch `batch` on `replicas`: the choice of that batch with the most replicas up
// to `replicas` (the tail model offers several counts per batch, and more queue less), or
// nullptr when the batch needs more replicas than that. The class is ignored: the tests' tasks
// run on one.
inline const optimizer::Choice* ChoiceWithin(const optimizer::Problem& problem, int dnn, int batch,
                                             int replicas) {
  const optimizer::Choice* found = nullptr;
  for (const optimizer::Choice& c : problem.dnns[dnn].choices) {
    if (c.batch == batch && c.replicas <= replicas &&
        (found == nullptr || c.replicas > found->replicas)) {
      found = &c;
    }
  }
  return found;
}

// Whether the model puts every route of `assignment` within its SLO times (1 + band).
inline bool WithinSlos(const optimizer::Problem& problem, const optimizer::Assignment& assignment,
                       double band) {
  for (size_t r = 0; r < problem.routes.size(); ++r) {
    const double ms = optimizer::RouteLatencyMs(problem, assignment, static_cast<int>(r));
    if (ms > problem.routes[r].slo_ms * (1 + band) + 1e-9) return false;
  }
  return true;
}

}  // namespace pipescale::testing
