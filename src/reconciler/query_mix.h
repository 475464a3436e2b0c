// The query-size mix Kairos plans for: the spec's until the router measures one that differs by
// more than kMixShift and has settled, then the measured one until the measurement moves that far
// from it again (hysteresis: noise rarely re-plans, a shift re-plans once; Kairos section 8.4).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/pipeline.h"

namespace pipescale::reconciler {

// The largest distance between the planned and the measured mix's cumulative shares (at the
// router's bucket bounds): Kairos's f (the share of queries below an auxiliary class's limit s)
// moves by at most about this much before the planner hears of it.
inline constexpr double kMixShift = 0.1;
// A window with fewer queries says too little about the mix to plan from. With 1000, two windows
// of one unchanging mix differ by more than kMixShift with probability about 2 exp(-10), 1e-4:
// with a fresh window every two minutes, about one needless re-plan in two weeks.
inline constexpr double kMinMixQueries = 1000;
// Sizes seen in fewer queries than this share are left out: one stray large query must not move
// Kairos's base class (which has to serve the largest size within QoS, at p99).
inline constexpr double kMinSizeShare = 0.001;

// The measurement is over a sliding window (2 minutes by default), so after a shift it moves for
// a whole window: a mix is adopted only once it has stayed within kMixShift / 2 of where it
// first stood for this long. Over any half of the default window a shift by more than kMixShift
// moves it by more than kMixShift / 2, so nothing is adopted halfway through. (A querySizes
// override with a window longer than 2 minutes may adopt a shift before it shows in full, then
// once more.)
inline constexpr double kMixSettleSeconds = 60;

using Mix = std::vector<model::QuerySize>;

// What the planner keeps between decisions.
struct MixMemory {
  Mix adopted;               // the measured mix planned for; empty: the spec's
  std::string adopted_for;   // SpecMixKey of the spec it replaced: a new spec forgets it
  Mix pending;               // a shifted measurement settling; empty: none
  double pending_since = 0;  // unix seconds

  bool operator==(const MixMemory&) const = default;
};

// The router's histogram of query sizes over a window: cumulative queries by upper bound (the
// `le` label; +Inf as infinity).
using SizeHistogram = std::map<double, double>;

// The mix in `histogram`, by size, each weight the share of the queries: a bucket's queries
// count at its upper bound (never planned smaller than they are), never above `largest` (the
// batch the models accept); sizes under kMinSizeShare are left out. Empty with fewer than
// kMinMixQueries.
Mix MeasuredMix(const SizeHistogram& histogram, int largest);

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
// Without a router nothing is measured and the spec's mix is planned.
MixStep StepMix(const model::Pipeline& pipeline, const MixMemory& before,
                const SizeHistogram& histogram, double now);

// Share by size, summing to 1; an empty mix (or one of no weight) is every query one row, as an
// empty spec.querySizes means.
std::map<int, double> Shares(const Mix& mix);

// "1: 75%, 10: 25%", for messages.
std::string MixText(const Mix& mix);

// A fingerprint of the pipeline's spec.querySizes (FNV-1a of its text), to tell when it changed.
std::string SpecMixKey(const model::Pipeline& pipeline);

// The batch every task's model accepts: no query larger is planned for.
int LargestQuery(const model::Pipeline& pipeline);

}  // namespace pipescale::reconciler
