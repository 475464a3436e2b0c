// From measured batches to the latencyMs a pipeline holds: one [batch, ms] point per batch size
// (the chosen statistic, rounded as written), the quadratic the parser fits to them, and the
// value's text in the document's style. Pure.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/latency.h"
#include "optimizer/fit.h"
#include "profile/stats.h"

namespace pipescale::profile {

// One batch size's measurements: the round trips less the server's reported queueing.
struct MeasuredBatch {
  int batch = 1;
  Summary summary;
  double queue_ms = 0;     // mean pipescale_queue_ms subtracted; 0 when none was reported
  int queue_reported = 0;  // answers that reported it
};

// How the parser turns the points into d(b): a fitted quadratic (from three batch sizes on),
// or a table interpolated linearly.
enum class FitModel { kQuadratic, kTable };

struct Latency {
  std::vector<model::LatencyPoint> points;  // ascending batch, ms as written
  FitModel model = FitModel::kQuadratic;
  std::optional<optimizer::QuadraticFit> fit;  // set for kQuadratic
};

// The points of `batches` at `statistic`, each at least limits::kMinMs. `model` kQuadratic
// becomes kTable below three batch sizes, as the parser does. kInvalid when `batches` is empty
// or the fit fails.
Result<Latency> MakeLatency(std::span<const MeasuredBatch> batches, Statistic statistic,
                            FitModel model);

// d(b) as the optimizers will see it.
double LatencyMs(const Latency& latency, int batch);

// Where the latencyMs value is written and how.
struct TextStyle {
  bool json = false;   // quoted keys (a JSON document)
  bool block = false;  // a block mapping ("points: [...]" lines) rather than "{points: [...]}"
  int column = 0;      // the column the value starts at
  int width = 100;     // lines are wrapped between points past this column
  std::string newline = "\n";
};

// The latencyMs value: {points: [[1, 10.2], [2, 12.9]]}, with model: table for a table.
// Continuation lines of a long list align under its first point.
std::string LatencyText(const Latency& latency, const TextStyle& style);

// A latency as written: at most three decimals, trailing zeros dropped ("12.5", "8").
std::string MsText(double ms);

}  // namespace pipescale::profile
