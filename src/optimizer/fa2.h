// FA2 (RTAS'22, IV.D-E): graph transformation into a forest with intensity-based SLA splits,
// then a dynamic program over 1 ms time slots choosing batch size and replicas per DNN.
// Beyond the paper, the SLA split is repaired by search and the plan improved by local moves
// verified against the untransformed problem, so a feasible plan is found whenever one exists.
#pragma once

#include <utility>
#include <vector>

#include "optimizer/problem.h"

namespace pipescale::optimizer {

struct Fa2Options {
  bool repair_split = true;       // also search the SLA split of cut paths, not only Eq. 4's
  bool local_improvement = true;  // 1- and 2-DNN moves on the original graph
};

// What the solve did, for reports, tests and benchmarks.
struct Fa2Trace {
  std::vector<std::pair<int, int>> removed_edges;  // (from, to) DNN indices
  int dp_runs = 0;
  Objective paper_objective = Objective::Infinite();  // the DP alone with Eq. 4's split
  double slot_ms = 1;  // the DP's time slot: 1 ms unless the problem outgrows its table
};

Solution SolveFa2(const Problem& problem, const Fa2Options& options = {},
                  Fa2Trace* trace = nullptr);

}  // namespace pipescale::optimizer
