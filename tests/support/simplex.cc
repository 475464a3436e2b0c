#include "support/simplex.h"

#include <cstddef>

namespace pipescale::testing {

LpResult MaximizeLp(const std::vector<double>& c, const std::vector<std::vector<double>>& a,
                    const std::vector<double>& b) {
  const size_t m = a.size(), n = c.size();
  constexpr double kEps = 1e-12;
  // Tableau rows: [A | I | b]; the last row is the reduced cost [-c | 0 | objective].
  std::vector<std::vector<double>> t(m + 1, std::vector<double>(n + m + 1, 0));
  std::vector<size_t> basis(m);
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) t[i][j] = a[i][j];
    t[i][n + i] = 1;
    t[i][n + m] = b[i];
    basis[i] = n + i;
  }
  for (size_t j = 0; j < n; ++j) t[m][j] = -c[j];
  LpResult out;
  while (true) {
    size_t enter = n + m;
    for (size_t j = 0; j < n + m; ++j) {
      if (t[m][j] < -kEps) {
        enter = j;  // Bland: the lowest index with a negative reduced cost
        break;
      }
    }
    if (enter == n + m) break;
    size_t leave = m;
    double best = 0;
    for (size_t i = 0; i < m; ++i) {
      if (t[i][enter] <= kEps) continue;
      const double ratio = t[i][n + m] / t[i][enter];
      if (leave == m || ratio < best - kEps || (ratio <= best + kEps && basis[i] < basis[leave])) {
        leave = i;
        best = ratio;
      }
    }
    if (leave == m) {
      out.unbounded = true;
      return out;
    }
    const double pivot = t[leave][enter];
    for (double& v : t[leave]) v /= pivot;
    for (size_t i = 0; i <= m; ++i) {
      if (i == leave || t[i][enter] == 0) continue;
      const double f = t[i][enter];
      for (size_t j = 0; j <= n + m; ++j) t[i][j] -= f * t[leave][j];
    }
    basis[leave] = enter;
  }
  out.x.assign(n, 0);
  for (size_t i = 0; i < m; ++i) {
    if (basis[i] < n) out.x[basis[i]] = t[i][n + m];
  }
  out.objective = t[m][n + m];
  return out;
}

}  // namespace pipescale::testing
