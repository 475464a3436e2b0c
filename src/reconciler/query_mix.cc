#include "reconciler/query_mix.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "common/strings.h"

namespace pipescale::reconciler {
namespace {

double ShareUpTo(const std::map<int, double>& shares, double bound) {
  double sum = 0;
  for (const auto& [size, share] : shares) {
    if (size > bound) break;
    sum += share;
  }
  return sum;
}

// `mix` with no size above `largest` (a spec edit may have lowered it since it was adopted).
Mix Clamped(const Mix& mix, int largest) {
  std::map<int, double> by_size;
  for (const model::QuerySize& q : mix) by_size[std::min(q.size, largest)] += q.weight;
  Mix out;
  for (const auto& [size, weight] : by_size) out.push_back({.size = size, .weight = weight});
  return out;
}

void ClearPending(MixMemory& m) {
  m.pending.clear();
  m.pending_since = 0;
}

}  // namespace

std::map<int, double> Shares(const Mix& mix) {
  double total = 0;
  for (const model::QuerySize& q : mix) total += q.weight;
  if (!(total > 0)) return {{1, 1.0}};
  std::map<int, double> out;
  for (const model::QuerySize& q : mix) out[q.size] += q.weight / total;
  return out;
}

int LargestQuery(const model::Pipeline& pipeline) {
  int largest = std::numeric_limits<int>::max();
  for (const model::Task& task : pipeline.spec.tasks) {
    if (!task.variants.empty()) largest = std::min(largest, task.MostAccurateVariant().max_batch);
  }
  return largest == std::numeric_limits<int>::max() ? 1 : std::max(largest, 1);
}

std::string SpecMixKey(const model::Pipeline& pipeline) {
  std::string text;
  for (const model::QuerySize& q : pipeline.spec.query_sizes) {
    text += StrFormat("%d:%.17g,", q.size, q.weight);
  }
  return Fingerprint(text);
}

Mix MeasuredMix(const SizeHistogram& histogram, int largest) {
  std::map<int, double> counts;
  double total = 0, below = 0;
  for (const auto& [hi, cumulative] : histogram) {
    if (std::isnan(hi) || !std::isfinite(cumulative)) continue;
    // Each bucket's rate is extrapolated on its own, so the cumulative counts may dip.
    const double count = std::max(0.0, cumulative - below);
    below = std::max(below, cumulative);
    if (count <= 0 || hi <= 0) continue;
    const int size = std::isfinite(hi) ? static_cast<int>(std::min<double>(hi, largest)) : largest;
    counts[std::clamp(size, 1, largest)] += count;
    total += count;
  }
  if (total < kMinMixQueries) return {};
  double kept = 0;
  for (const auto& [size, count] : counts) kept += count >= kMinSizeShare * total ? count : 0;
  Mix out;
  for (const auto& [size, count] : counts) {
    if (count >= kMinSizeShare * total) out.push_back({.size = size, .weight = count / kept});
  }
  return out;
}

double MixDistance(const Mix& a, const Mix& b, const SizeHistogram& histogram) {
  const std::map<int, double> sa = Shares(a), sb = Shares(b);
  double most = 0;
  for (const auto& [bound, cumulative] : histogram) {
    if (std::isnan(bound)) continue;
    most = std::max(most, std::abs(ShareUpTo(sa, bound) - ShareUpTo(sb, bound)));
  }
  return most;
}

std::string MixText(const Mix& mix) {
  std::string out;
  for (const auto& [size, share] : Shares(mix)) {
    out += StrFormat("%s%d: %.0f%%", out.empty() ? "" : ", ", size, 100 * share);
  }
  return out;
}

MixStep StepMix(const model::Pipeline& pipeline, const MixMemory& before,
                const SizeHistogram& histogram, double now) {
  MixStep step{.memory = before};
  MixMemory& m = step.memory;
  // Without a router nothing measures the mix; after a spec edit the spec's is the news.
  if (!pipeline.spec.router || (!m.adopted.empty() && m.adopted_for != SpecMixKey(pipeline))) {
    m = {};
  }
  const int largest = LargestQuery(pipeline);
  step.planned = m.adopted.empty() ? pipeline.spec.query_sizes : Clamped(m.adopted, largest);
  if (pipeline.spec.router) step.measured = MeasuredMix(histogram, largest);
  if (step.measured.empty()) {
    ClearPending(m);  // a measurement from before the gap is stale
    return step;
  }
  step.shift = MixDistance(step.planned, step.measured, histogram);
  if (*step.shift <= kMixShift) {
    ClearPending(m);
    return step;
  }
  if (m.pending.empty() || MixDistance(m.pending, step.measured, histogram) > kMixShift / 2) {
    m.pending = step.measured;  // still moving: settle from here
    m.pending_since = now;
    return step;
  }
  if (now - m.pending_since < kMixSettleSeconds) return step;
  step.planned = m.adopted = step.measured;
  m.adopted_for = SpecMixKey(pipeline);
  ClearPending(m);
  step.changed = true;
  return step;
}

}  // namespace pipescale::reconciler
