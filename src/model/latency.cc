#include "model/latency.h"

#include <algorithm>

#include "common/check.h"

namespace pipescale::model {

double LatencyProfile::Ms(int batch) const {
  PIPESCALE_CHECK(batch >= 1);
  if (kind == Kind::kQuadratic) {
    const double x = batch;
    return quadratic.a * x * x + quadratic.b * x + quadratic.c;
  }
  PIPESCALE_CHECK(!points.empty());
  if (points.size() == 1) return points.front().ms * batch / points.front().batch;
  // First segment whose right end is at or beyond `batch`; the outer segments extrapolate.
  auto right = std::lower_bound(points.begin(), points.end(), batch,
                                [](const LatencyPoint& p, int b) { return p.batch < b; });
  if (right == points.begin()) ++right;
  if (right == points.end()) --right;
  const LatencyPoint& lo = *(right - 1);
  const LatencyPoint& hi = *right;
  const double slope = (hi.ms - lo.ms) / (hi.batch - lo.batch);
  const double ms = lo.ms + slope * (batch - lo.batch);
  // Past the last point nothing was measured: a table whose latency falls at its end would
  // extrapolate to 0 and below, and a larger batch never costs less than the largest measured.
  return batch > points.back().batch ? std::max(ms, points.back().ms) : ms;
}

int LatencyProfile::MaxBatch(int limit) const {
  if (kind == Kind::kTable && !points.empty()) return std::min(limit, points.back().batch);
  return limit;
}

}  // namespace pipescale::model
