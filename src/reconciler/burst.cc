#include "reconciler/burst.h"

#include <algorithm>
#include <cmath>

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
  const size_t n = recent.size() - step;
  double squares = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::max(0.0, recent[i + step] - recent[i]);
    squares += d * d;
  }
  const double rms = std::sqrt(squares / static_cast<double>(n));
  return measured + allowance * rms;
}

}  // namespace pipescale::reconciler
