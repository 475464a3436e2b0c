// A dense tableau simplex for tiny LPs in tests: maximise c.x subject to A x <= b, x >= 0,
// with b >= 0 (so the origin is feasible). Bland's rule, so it never cycles. An independent
// yardstick for the MILP solver, not a production LP code.
#pragma once

#include <vector>

namespace pipescale::testing {

struct LpResult {
  double objective = 0;
  std::vector<double> x;
  bool unbounded = false;
  // MaximizeLexicographicLp only: the secondary objective at the returned x.
  double secondary = 0;
};

LpResult MaximizeLp(const std::vector<double>& c, const std::vector<std::vector<double>>& a,
                    const std::vector<double>& b);

// Maximises `primary`, then `secondary` over the primary's optimal face: exact lexicographic
// optimisation, with no weight that trades a little of the first for much of the second.
LpResult MaximizeLexicographicLp(const std::vector<double>& primary,
                                 const std::vector<double>& secondary,
                                 const std::vector<std::vector<double>>& a,
                                 const std::vector<double>& b);

}  // namespace pipescale::testing
