#include "profile/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "common/strings.h"

namespace pipescale::profile {
namespace {

// The nearest-rank percentile of sorted samples.
double SortedPercentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  const size_t index =
      static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(sorted.size()))) - 1;
  return sorted[index];
}

}  // namespace

double Percentile(std::span<const double> samples_ms, double p) {
  std::vector<double> sorted(samples_ms.begin(), samples_ms.end());
  std::sort(sorted.begin(), sorted.end());
  return SortedPercentile(sorted, p);
}

Summary Summarize(std::span<const double> samples_ms) {
  if (samples_ms.empty()) return {};
  std::vector<double> sorted(samples_ms.begin(), samples_ms.end());
  std::sort(sorted.begin(), sorted.end());
  const double sum = std::accumulate(sorted.begin(), sorted.end(), 0.0);
  return {.count = static_cast<int>(sorted.size()),
          .min_ms = sorted.front(),
          .p50_ms = SortedPercentile(sorted, 50),
          .mean_ms = sum / static_cast<double>(sorted.size()),
          .p99_ms = SortedPercentile(sorted, 99),
          .max_ms = sorted.back()};
}

Result<Statistic> ParseStatistic(std::string_view name) {
  if (name == "mean") return Statistic::kMean;
  if (name == "p50") return Statistic::kP50;
  if (name == "p99") return Statistic::kP99;
  return Error{ErrorKind::kInvalid, "must be mean, p50 or p99, got " + QuoteUserText(name)};
}

const char* StatisticName(Statistic statistic) {
  switch (statistic) {
    case Statistic::kMean:
      return "mean";
    case Statistic::kP50:
      return "p50";
    case Statistic::kP99:
      return "p99";
  }
  return "mean";
}

double Pick(const Summary& summary, Statistic statistic) {
  switch (statistic) {
    case Statistic::kMean:
      return summary.mean_ms;
    case Statistic::kP50:
      return summary.p50_ms;
    case Statistic::kP99:
      return summary.p99_ms;
  }
  return summary.mean_ms;
}

}  // namespace pipescale::profile
