// Reading a compiled FA2 problem in tests: the choice a running (batch, replicas) stands for.
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

}  // namespace pipescale::testing
