// Robust fit of the quadratic latency model d(b) = a b^2 + b b + c to profiled points (FA2
// IV.A). Huber-weighted least squares, so a few straggler measurements do not bend the curve.
#pragma once

#include <span>

#include "common/result.h"
#include "model/latency.h"

namespace pipescale::optimizer {

struct QuadraticFit {
  model::QuadraticLatency coefficients;
  model::FitQuality quality;
};

// Fits by iteratively reweighted least squares with Huber weights (k = 1.345 robust sigma,
// sigma from the median absolute deviation). Returns kInvalid when fewer than three distinct
// batch sizes are given, since a quadratic is then not determined.
Result<QuadraticFit> FitQuadratic(std::span<const model::LatencyPoint> points);

}  // namespace pipescale::optimizer
