// Tuning a baseline as its user would: the knobs of gym/baseline.h swept over a grid, each
// setting run on the same trace and seed, and the cheapest that keeps every path at the SLO
// attainment asked. This is the baseline pipescale is compared with.
#pragma once

#include <string>
#include <vector>

#include "gym/report.h"
#include "gym/simulation.h"

namespace pipescale::gym {

struct TuneGrid {
  double attainment = 0.99;  // every path's share of requests within its SLO, at the least
  std::vector<double> targets = {0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
  std::vector<int> batches = {0, 1, 2, 4, 8, 16, 32};  // 0: each task's largest fit
  // Then the targets this far either side of the grid's pick, at its batch: a user tunes a
  // target finer than a tenth once the grid has found where it lies (0: no second pass).
  double refine = 0.05;
};

// Whether --tune sweeps `policy`: hpa, keda or kpa written without knobs (its @CLASS and +door
// kept); a fixed count has no knob to turn, and knobs written are the user's.
bool Tunable(const std::string& policy);

// Sweeps a Tunable `base` over the grid, then refines around its pick. kInvalid for a policy that
// is not, and for what Simulate refuses.
Result<Tuned> Tune(const nlohmann::json& pipeline_object, const Options& options,
                   const std::string& base, const TuneGrid& grid = {});

}  // namespace pipescale::gym
