#include "reconciler/query_mix.h"

#include <algorithm>
#include <cmath>
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

// The size a bucket (lo, hi]'s queries are planned at.
int Representative(double lo, double hi, const Mix& declared, int largest) {
  int rep = 0;
  for (const model::QuerySize& q : declared) {
    if (q.size > lo && q.size <= hi) rep = std::max(rep, q.size);
  }
  if (rep == 0) rep = std::isfinite(hi) ? static_cast<int>(std::min<double>(hi, largest)) : largest;
  return std::clamp(rep, 1, largest);
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

Mix MeasuredMix(const SizeHistogram& histogram, const Mix& declared, int largest) {
  std::map<int, double> counts;
  double total = 0, lo = 0, below = 0;
  for (const auto& [hi, cumulative] : histogram) {
    if (std::isnan(hi) || !std::isfinite(cumulative)) continue;
    // Each bucket's rate is extrapolated on its own, so the cumulative counts may dip.
    const double count = std::max(0.0, cumulative - below);
    below = std::max(below, cumulative);
    if (count > 0 && hi > 0) {
      counts[Representative(lo, hi, declared, largest)] += count;
      total += count;
    }
    lo = hi;
  }
  if (total < kMinMixQueries) return {};
  Mix out;
  for (const auto& [size, count] : counts) out.push_back({.size = size, .weight = count / total});
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
  MixStep step{.planned = before.adopted.empty() ? pipeline.spec.query_sizes : before.adopted,
               .memory = before};
  step.measured = MeasuredMix(histogram, pipeline.spec.query_sizes, LargestQuery(pipeline));
  if (step.measured.empty()) return step;
  step.shift = MixDistance(step.planned, step.measured, histogram);
  MixMemory& m = step.memory;
  if (*step.shift <= kMixShift) {
    m.pending.clear();
    m.pending_since = 0;
    return step;
  }
  if (m.pending.empty() || MixDistance(m.pending, step.measured, histogram) > kMixShift / 2) {
    m.pending = step.measured;  // still moving: settle from here
    m.pending_since = now;
    return step;
  }
  if (now - m.pending_since < kMixSettleSeconds) return step;
  step.planned = m.adopted = step.measured;
  m.pending.clear();
  m.pending_since = 0;
  step.changed = true;
  return step;
}

}  // namespace pipescale::reconciler
