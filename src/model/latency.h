// Latency profiles: how long one batch of a model variant takes on one hardware class.
// Either the paper's quadratic d(b) = a b^2 + b b + c or a measured table that is interpolated.
#pragma once

#include <utility>
#include <vector>

namespace pipescale::model {

// d(b) = a * b^2 + b * batch + c, in milliseconds.
struct QuadraticLatency {
  double a = 0;
  double b = 0;
  double c = 0;

  bool operator==(const QuadraticLatency&) const = default;
};

// One measured point of a profile: a batch size and the latency of that batch.
struct LatencyPoint {
  int batch = 1;
  double ms = 0;

  bool operator==(const LatencyPoint&) const = default;
};

// How well a quadratic fitted from measured points describes them.
struct FitQuality {
  double rmse_ms = 0;       // root mean square residual over all points
  double max_error_ms = 0;  // largest absolute residual
  int outliers = 0;         // points the robust fit down-weighted as outliers

  bool operator==(const FitQuality&) const = default;
};

struct LatencyProfile {
  enum class Kind { kQuadratic, kTable };

  Kind kind = Kind::kQuadratic;
  QuadraticLatency quadratic;
  // The measured points, sorted by batch. For kTable they are the model (linear interpolation
  // between points, linear extrapolation below the first and above the last, never below the
  // last point's latency there); for a fitted kQuadratic they are kept to report the fit.
  std::vector<LatencyPoint> points;
  bool fitted = false;  // kQuadratic derived from points
  FitQuality fit;

  // Latency of one batch of `batch` requests, in ms. Precondition: batch >= 1.
  double Ms(int batch) const;

  // Largest batch the profile describes without extrapolating upward (tables end at their
  // last point); `limit` for quadratic profiles.
  int MaxBatch(int limit) const;

  bool operator==(const LatencyProfile&) const = default;
};

}  // namespace pipescale::model
