#include "optimizer/fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <vector>

namespace pipescale::optimizer {
namespace {

using Vec3 = std::array<double, 3>;

// Solves the 3x3 weighted normal equations; false when they are singular.
bool WeightedLeastSquares(std::span<const model::LatencyPoint> points,
                          const std::vector<double>& weights, Vec3& out) {
  std::array<std::array<double, 4>, 3> m{};  // augmented [X^T W X | X^T W y]
  for (size_t i = 0; i < points.size(); ++i) {
    const double x = points[i].batch;
    const Vec3 row = {x * x, x, 1.0};
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) m[r][c] += weights[i] * row[r] * row[c];
      m[r][3] += weights[i] * row[r] * points[i].ms;
    }
  }
  for (int col = 0; col < 3; ++col) {
    int pivot = col;
    for (int r = col + 1; r < 3; ++r) {
      if (std::abs(m[r][col]) > std::abs(m[pivot][col])) pivot = r;
    }
    if (std::abs(m[pivot][col]) < 1e-12) return false;
    std::swap(m[col], m[pivot]);
    for (int r = 0; r < 3; ++r) {
      if (r == col) continue;
      const double f = m[r][col] / m[col][col];
      for (int c = col; c < 4; ++c) m[r][c] -= f * m[col][c];
    }
  }
  for (int r = 0; r < 3; ++r) out[r] = m[r][3] / m[r][r];
  return true;
}

double Median(std::vector<double> v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  return v[mid];
}

}  // namespace

Result<QuadraticFit> FitQuadratic(std::span<const model::LatencyPoint> points) {
  std::set<int> batches;
  for (const auto& p : points) batches.insert(p.batch);
  if (batches.size() < 3) {
    return Error{ErrorKind::kInvalid,
                 "a quadratic fit needs points at 3 or more distinct batch sizes, got " +
                     std::to_string(batches.size())};
  }

  std::vector<double> weights(points.size(), 1.0);
  std::vector<double> residuals(points.size());
  Vec3 beta{};
  constexpr double kHuberK = 1.345;
  constexpr int kMaxIterations = 50;
  int outliers = 0;
  for (int iter = 0; iter < kMaxIterations; ++iter) {
    Vec3 next{};
    if (!WeightedLeastSquares(points, weights, next)) {
      return Error{ErrorKind::kInvalid, "the profile points do not determine a quadratic"};
    }
    const bool converged = iter > 0 && std::abs(next[0] - beta[0]) < 1e-12 &&
                           std::abs(next[1] - beta[1]) < 1e-10 &&
                           std::abs(next[2] - beta[2]) < 1e-9;
    beta = next;
    std::vector<double> abs_res(points.size());
    for (size_t i = 0; i < points.size(); ++i) {
      const double x = points[i].batch;
      residuals[i] = points[i].ms - (beta[0] * x * x + beta[1] * x + beta[2]);
      abs_res[i] = std::abs(residuals[i]);
    }
    const double sigma = Median(abs_res) / 0.6745;
    outliers = 0;
    if (sigma < 1e-12 || converged) {
      // An exact fit (or a settled one): weights stay as they are.
      for (size_t i = 0; i < points.size(); ++i) {
        if (sigma >= 1e-12 && abs_res[i] > kHuberK * sigma) ++outliers;
      }
      break;
    }
    for (size_t i = 0; i < points.size(); ++i) {
      const double k = kHuberK * sigma;
      weights[i] = abs_res[i] <= k ? 1.0 : k / abs_res[i];
      if (abs_res[i] > k) ++outliers;
    }
  }

  QuadraticFit fit;
  fit.coefficients = {.a = beta[0], .b = beta[1], .c = beta[2]};
  double sum_sq = 0;
  for (double r : residuals) {
    sum_sq += r * r;
    fit.quality.max_error_ms = std::max(fit.quality.max_error_ms, std::abs(r));
  }
  fit.quality.rmse_ms = std::sqrt(sum_sq / static_cast<double>(points.size()));
  fit.quality.outliers = outliers;
  return fit;
}

}  // namespace pipescale::optimizer
