#include "reconciler/burst.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "optimizer/pool.h"

namespace pipescale::reconciler {

int LeadIntervals(const model::PipelineSpec& spec) {
  const double interval = std::max(spec.interval_seconds, 1.0);
  const double lead = interval + optimizer::SlowestStartupSeconds(spec);
  return std::max(1, static_cast<int>(std::ceil(lead / interval - 1e-9)));
}

double BurstRate(std::span<const double> series, double measured, int lead, double allowance) {
  const size_t step = static_cast<size_t>(std::max(lead, 1));
  if (series.size() < step + kBurstMinRises) return measured;
  const std::span<const double> recent = series.last(std::min(series.size(), kBurstWindow));
  // The rises over `step` intervals, root mean square over every step (a fall counts as no rise):
  // a rise that keeps on (a ramp) counts as well as one that comes and goes, and a load that
  // went away keeps nothing for its fall.
  // In units of the largest rise: a Prometheus answer of 1e300 squared would be infinite.
  const size_t n = recent.size() - step;
  const auto rise = [&](size_t i) { return std::max(0.0, recent[i + step] - recent[i]); };
  double largest = 0;
  for (size_t i = 0; i < n; ++i) largest = std::max(largest, rise(i));
  if (largest == 0 || !std::isfinite(largest)) return measured;
  double squares = 0;
  for (size_t i = 0; i < n; ++i) squares += (rise(i) / largest) * (rise(i) / largest);
  double mean = 0;
  for (double r : recent) mean += std::max(0.0, r) / static_cast<double>(recent.size());
  const double noise = mean / kRateWindowSeconds / largest / largest;
  const double rms = largest * std::sqrt(std::max(0.0, squares / static_cast<double>(n) - noise));
  return std::min(measured + allowance * rms, std::numeric_limits<double>::max());
}

}  // namespace pipescale::reconciler
