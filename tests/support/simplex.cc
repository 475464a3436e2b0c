#include "support/simplex.h"

#include <cmath>
#include <cstddef>

namespace pipescale::testing {
namespace {

constexpr double kEps = 1e-12;
// A reduced cost this close to zero keeps an earlier objective on its optimal face: pivoting
// on such a column changes the earlier objective by at most this times the step.
constexpr double kFace = 1e-9;

// Rows 0..m-1: [A | I | b]; then one reduced-cost row [-c | 0 | objective] per objective.
struct Tableau {
  size_t m = 0, n = 0;
  std::vector<std::vector<double>> t;
  std::vector<size_t> basis;
};

Tableau MakeTableau(const std::vector<std::vector<double>>& objectives,
                    const std::vector<std::vector<double>>& a, const std::vector<double>& b) {
  Tableau tab{.m = a.size(), .n = objectives[0].size(), .t = {}, .basis = {}};
  const size_t m = tab.m, n = tab.n;
  tab.t.assign(m + objectives.size(), std::vector<double>(n + m + 1, 0));
  tab.basis.resize(m);
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) tab.t[i][j] = a[i][j];
    tab.t[i][n + i] = 1;
    tab.t[i][n + m] = b[i];
    tab.basis[i] = n + i;
  }
  for (size_t k = 0; k < objectives.size(); ++k) {
    for (size_t j = 0; j < n; ++j) tab.t[m + k][j] = -objectives[k][j];
  }
  return tab;
}

void Pivot(Tableau& tab, size_t leave, size_t enter) {
  auto& t = tab.t;
  const size_t width = tab.n + tab.m + 1;
  const double pivot = t[leave][enter];
  for (double& v : t[leave]) v /= pivot;
  for (size_t i = 0; i < t.size(); ++i) {
    if (i == leave || t[i][enter] == 0) continue;
    const double f = t[i][enter];
    for (size_t j = 0; j < width; ++j) t[i][j] -= f * t[leave][j];
  }
  tab.basis[leave] = enter;
}

// Bland: the lowest column that improves objective `k` and leaves every earlier one on its
// optimal face; n + m when there is none.
size_t EnteringColumn(const Tableau& tab, size_t k) {
  const size_t width = tab.n + tab.m;
  for (size_t j = 0; j < width; ++j) {
    if (tab.t[tab.m + k][j] >= -kEps) continue;
    bool on_face = true;
    for (size_t e = 0; e < k; ++e) on_face &= std::abs(tab.t[tab.m + e][j]) <= kFace;
    if (on_face) return j;
  }
  return width;
}

// Bland's ratio test; m when the column is unbounded.
size_t LeavingRow(const Tableau& tab, size_t enter) {
  const size_t m = tab.m, rhs = tab.n + tab.m;
  size_t leave = m;
  double best = 0;
  for (size_t i = 0; i < m; ++i) {
    if (tab.t[i][enter] <= kEps) continue;
    const double ratio = tab.t[i][rhs] / tab.t[i][enter];
    if (leave == m || ratio < best - kEps ||
        (ratio <= best + kEps && tab.basis[i] < tab.basis[leave])) {
      leave = i;
      best = ratio;
    }
  }
  return leave;
}

LpResult Solve(const std::vector<std::vector<double>>& objectives,
               const std::vector<std::vector<double>>& a, const std::vector<double>& b) {
  Tableau tab = MakeTableau(objectives, a, b);
  LpResult out;
  for (size_t k = 0; k < objectives.size(); ++k) {
    while (true) {
      const size_t enter = EnteringColumn(tab, k);
      if (enter == tab.n + tab.m) break;
      const size_t leave = LeavingRow(tab, enter);
      if (leave == tab.m) {
        out.unbounded = true;
        return out;
      }
      Pivot(tab, leave, enter);
    }
  }
  const size_t rhs = tab.n + tab.m;
  out.x.assign(tab.n, 0);
  for (size_t i = 0; i < tab.m; ++i) {
    if (tab.basis[i] < tab.n) out.x[tab.basis[i]] = tab.t[i][rhs];
  }
  out.objective = tab.t[tab.m][rhs];
  if (objectives.size() > 1) out.secondary = tab.t[tab.m + 1][rhs];
  return out;
}

}  // namespace

LpResult MaximizeLp(const std::vector<double>& c, const std::vector<std::vector<double>>& a,
                    const std::vector<double>& b) {
  return Solve({c}, a, b);
}

LpResult MaximizeLexicographicLp(const std::vector<double>& primary,
                                 const std::vector<double>& secondary,
                                 const std::vector<std::vector<double>>& a,
                                 const std::vector<double>& b) {
  return Solve({primary, secondary}, a, b);
}

}  // namespace pipescale::testing
