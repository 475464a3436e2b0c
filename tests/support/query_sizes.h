// The router's histogram of query sizes as Prometheus returns it to the operator, built from
// the sizes of the queries a test imagines sent: what the query-mix tests plan from.
#pragma once

#include <algorithm>
#include <limits>
#include <map>
#include <vector>

#include "routing/request.h"

namespace pipescale::testing {

// Cumulative counts at each of the router's bucket bounds, and at +Inf.
inline std::map<double, double> SizeHistogram(const std::vector<int>& sizes) {
  std::map<double, double> out;
  for (double bound : routing::QuerySizeBounds()) {
    out[bound] = static_cast<double>(
        std::count_if(sizes.begin(), sizes.end(), [&](int s) { return s <= bound; }));
  }
  out[std::numeric_limits<double>::infinity()] = static_cast<double>(sizes.size());
  return out;
}

// `n` queries of each size.
inline std::vector<int> Sizes(std::initializer_list<std::pair<int, int>> counts) {
  std::vector<int> out;
  for (auto [size, n] : counts) out.insert(out.end(), n, size);
  return out;
}

}  // namespace pipescale::testing
