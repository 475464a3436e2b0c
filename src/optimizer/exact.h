// The true optimum of Eq. 3 on the original (untransformed) graph by branch and bound over
// each DNN's Pareto front, with exact (not slotted) latencies. The yardstick for FA2.
#pragma once

#include <cstdint>

#include "optimizer/problem.h"

namespace pipescale::optimizer {

struct ExactOptions {
  std::int64_t max_nodes = 50'000'000;  // search nodes before giving up with kTimeLimit
  // DNNs bounded over all nodes (a node bounds every DNN below it) before giving up with
  // kTimeLimit: under a second, whatever the size of the problem.
  std::int64_t max_work = 30'000'000;
};

Solution SolveExact(const Problem& problem, const ExactOptions& options = {});

}  // namespace pipescale::optimizer
