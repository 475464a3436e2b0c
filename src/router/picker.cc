#include "router/picker.h"

#include <vector>

namespace pipescale::router {
namespace {

// The candidate at `u` of the cumulative weights, skipping `excluded`.
int Draw(std::span<const Candidate> candidates, double u, int excluded) {
  double total = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (static_cast<int>(i) != excluded) total += candidates[i].weight;
  }
  double at = u * total;
  int last = -1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (static_cast<int>(i) == excluded) continue;
    last = static_cast<int>(i);
    if (at < candidates[i].weight) return last;
    at -= candidates[i].weight;
  }
  return last;  // u rounding up to the total
}

}  // namespace

int PickOfTwo(std::span<const Candidate> candidates, double u1, double u2) {
  if (candidates.empty()) return -1;
  const int first = Draw(candidates, u1, -1);
  if (candidates.size() == 1) return first;
  const int second = Draw(candidates, u2, first);
  // Outstanding per unit of capacity: a pod planned for twice the rate may hold twice as many.
  const auto load = [&](int i) { return candidates[i].outstanding / candidates[i].weight; };
  return load(second) < load(first) ? second : first;
}

}  // namespace pipescale::router
