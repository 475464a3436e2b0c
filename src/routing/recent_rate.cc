#include "routing/recent_rate.h"

#include <numeric>

namespace pipescale::routing {

double RecentRate(std::span<const double> counts) {
  if (counts.empty()) return 0;
  return std::accumulate(counts.begin(), counts.end(), 0.0) / static_cast<double>(counts.size());
}

}  // namespace pipescale::routing
