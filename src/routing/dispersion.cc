#include "routing/dispersion.h"

#include <algorithm>
#include <cmath>

#include "model/limits.h"

namespace pipescale::routing {

double ArrivalDispersion(std::span<const double> counts) {
  while (!counts.empty() && !(counts.front() > 0)) counts = counts.subspan(1);
  double squares = 0, sums = 0, total = 0;
  for (size_t i = 0; i + 1 < counts.size(); ++i) {
    const double step = counts[i + 1] - counts[i];
    squares += step * step;
    sums += counts[i] + counts[i + 1];
  }
  for (double n : counts) total += n;
  if (counts.size() < 2 || !(sums > 0) || !std::isfinite(squares / sums)) return 1;
  const auto differences = static_cast<double>(counts.size() - 1);
  const double mean = total / static_cast<double>(counts.size());
  const double noise = 2 * std::sqrt((3 + 1 / (2 * mean)) / differences);
  return std::clamp(squares / sums - noise, 1.0, limits::kMaxDispersion);
}

}  // namespace pipescale::routing
