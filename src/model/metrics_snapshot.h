// What the operator observed of a pipeline's load at one moment, as read from Prometheus.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pipescale::model {

struct MetricsSnapshot {
  std::map<std::string, double> path_rates_rps;   // measured rate per execution path
  std::map<std::string, double> path_latency_ms;  // measured tail latency per path
  std::optional<double> arrival_rate_rps;         // total rate into the pipeline
  // Measured requests emitted per request served, by "task/variant" (Loki). Optional: the
  // spec's multiplicativeFactor stands in where a variant has no measurement.
  std::map<std::string, double> multiplicative_factors;
  // Series that were absent or stale, e.g. `pathRate{path="car-qa"}`. A missing value is
  // never read as 0: the operator keeps its current plan instead.
  std::vector<std::string> missing;

  bool Complete() const { return missing.empty(); }
  bool operator==(const MetricsSnapshot&) const = default;
};

// Per path, its rate at past steps of the pipeline's interval, oldest first: what a restarted
// operator rebuilds the planners' memory from.
using RateHistory = std::map<std::string, std::vector<double>>;

}  // namespace pipescale::model
