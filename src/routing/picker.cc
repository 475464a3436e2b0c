#include "routing/picker.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace pipescale::routing {
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
    if (static_cast<int>(i) == excluded || candidates[i].weight <= 0) continue;
    last = static_cast<int>(i);
    if (at < candidates[i].weight) return last;
    at -= candidates[i].weight;
  }
  return last;  // u rounding up to the total
}

}  // namespace

int PickPod(std::span<const Candidate> candidates, double u1, double u2) {
  if (candidates.size() > kScanAll) return PickOfTwo(candidates, u1, u2);
  const auto finish = [](const Candidate& c) {
    const int batch = std::max(1, c.batch);
    const int batches = (c.outstanding + batch) / batch;  // with the new request, rounded up
    return static_cast<double>(batches * batch) / c.weight;
  };
  double least = std::numeric_limits<double>::infinity();
  for (const Candidate& c : candidates) least = std::min(least, finish(c));
  int fullest = 0;
  for (const Candidate& c : candidates) {
    if (finish(c) <= least * (1 + 1e-12)) fullest = std::max(fullest, c.outstanding);
  }
  // The least loaded with the fullest batch, as candidates of their own weight (the rest weigh
  // nothing).
  std::vector<Candidate> tied(candidates.begin(), candidates.end());
  for (Candidate& c : tied) {
    if (finish(c) > least * (1 + 1e-12) || c.outstanding != fullest) c.weight = 0;
  }
  return Draw(tied, u1, -1);
}

int PickOfTwo(std::span<const Candidate> candidates, double u1, double u2) {
  if (candidates.empty()) return -1;
  const int first = Draw(candidates, u1, -1);
  if (candidates.size() == 1) return first;
  const int second = Draw(candidates, u2, first);
  // Outstanding per unit of capacity: a pod planned for twice the rate may hold twice as many.
  const auto load = [&](int i) { return candidates[i].outstanding / candidates[i].weight; };
  return load(second) < load(first) ? second : first;
}

}  // namespace pipescale::routing
