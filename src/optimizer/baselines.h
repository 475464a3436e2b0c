// The comparison points of FA2's evaluation (VI.A), on the same compiled problem: DS2 (no
// batching), InferLine (greedy local batch growth) and GrandSLAm (static SLA split).
#pragma once

#include "optimizer/problem.h"

namespace pipescale::optimizer {

Solution SolveDs2(const Problem& problem);
Solution SolveInferline(const Problem& problem);
Solution SolveGrandslam(const Problem& problem);

}  // namespace pipescale::optimizer
