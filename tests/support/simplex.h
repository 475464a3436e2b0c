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
};

LpResult MaximizeLp(const std::vector<double>& c, const std::vector<std::vector<double>>& a,
                    const std::vector<double>& b);

}  // namespace pipescale::testing
