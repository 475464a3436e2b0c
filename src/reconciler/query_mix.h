// The query-size mix Kairos plans for: the spec's until the router measures one that differs by
// more than kMixShift and has settled, then the measured one until the measurement moves that far
// from it again (hysteresis: noise never re-plans, a shift re-plans once; Kairos section 8.4).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/pipeline.h"

namespace pipescale::reconciler {

// The largest distance between the planned and the measured mix's cumulative shares: Kairos's
// f (the share of queries below an auxiliary class's limit s) moves by at most this much, at
// any s, before the planner hears of it.
inline constexpr double kMixShift = 0.1;
// A window with fewer queries says too little about the mix to plan from: with 1000, sampling
// noise alone moves the measurement kMixShift from its true mix in about one window in 10^4
// (2 exp(-2 n shift^2 / 2), comparing two such windows).
inline constexpr double kMinMixQueries = 1000;

// The measurement is over a sliding window (2 minutes by default), so after a shift it moves for
// a whole window: a mix is adopted only once it has stayed within kMixShift / 2 of where it
// first stood for this long. Over any half window a move by more than kMixShift shifts it by
// more than kMixShift / 2, so nothing is adopted halfway through.
inline constexpr double kMixSettleSeconds = 60;

using Mix = std::vector<model::QuerySize>;

// What the planner keeps between decisions.
struct MixMemory {
  Mix adopted;               // the measured mix planned for; empty: the spec's
  Mix pending;               // a shifted measurement settling; empty: none
  double pending_since = 0;  // unix seconds

  bool operator==(const MixMemory&) const = default;
};

// The router's histogram of query sizes over a window: cumulative queries by upper bound (the
// `le` label; +Inf as infinity).
using SizeHistogram = std::map<double, double>;

// The mix in `histogram`, by size, each weight the share of the queries: a bucket's queries
// count at the largest size of `declared` in the bucket, else at the bucket's upper bound,
// never above `largest` (the batch the models accept). Empty with fewer than kMinMixQueries.
Mix MeasuredMix(const SizeHistogram& histogram, const Mix& declared, int largest);

// The largest difference of the two mixes' cumulative shares at the histogram's bounds.
double MixDistance(const Mix& a, const Mix& b, const SizeHistogram& histogram);

struct MixStep {
  Mix planned;                  // what the planner plans for now
  MixMemory memory;             // what the next step starts from
  Mix measured;                 // empty: too few queries to tell
  std::optional<double> shift;  // distance of the measurement from the mix planned before
  bool changed = false;         // the measured mix replaced the one planned before
};

// One decision's mix at `now`: the adopted one (or the spec's) while the measurement is within
// kMixShift of it or still moving; the measurement once it has settled kMixSettleSeconds away.
MixStep StepMix(const model::Pipeline& pipeline, const MixMemory& before,
                const SizeHistogram& histogram, double now);

// Share by size, summing to 1; an empty mix (or one of no weight) is every query one row, as an
// empty spec.querySizes means.
std::map<int, double> Shares(const Mix& mix);

// "1: 75%, 10: 25%", for messages.
std::string MixText(const Mix& mix);

// The batch every task's model accepts: no query larger is planned for.
int LargestQuery(const model::Pipeline& pipeline);

}  // namespace pipescale::reconciler
