// Statistics of measured round trips for `pipescale profile`: per batch size, the p50, mean and
// p99 of the samples, and which of them becomes the profile's latencyMs. Pure.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "common/result.h"

namespace pipescale::profile {

struct Summary {
  int count = 0;
  double min_ms = 0;
  double p50_ms = 0;
  double mean_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
};

// The samples' summary; percentiles by the nearest-rank method (the smallest sample with at
// least p% of the samples at or below it). All zero for no samples.
Summary Summarize(std::span<const double> samples_ms);

// The nearest-rank percentile `p` (0 < p <= 100) of `samples_ms`, which need not be sorted;
// 0 for no samples.
double Percentile(std::span<const double> samples_ms, double p);

// Which summary value a profile records as a batch's latency.
enum class Statistic { kMean, kP50, kP99 };

// "mean", "p50", "p99"; kInvalid naming the choices otherwise.
Result<Statistic> ParseStatistic(std::string_view name);
const char* StatisticName(Statistic statistic);
double Pick(const Summary& summary, Statistic statistic);

}  // namespace pipescale::profile
