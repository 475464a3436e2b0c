// Exhaustive search over every (hardware class, batch size) of every DNN, written from the
// model alone: the independent yardstick for the branch and bound on small instances.
#pragma once

#include <cstdint>
#include <optional>

#include "model/pipeline.h"

namespace pipescale::testing {

struct BruteForceResult {
  std::int64_t replicas = 0;
  double cost_per_hour = 0;
};

// The minimum total replicas (then cost) over all plans meeting Eq. 3, or nullopt when no plan
// does. Only for small instances: the search visits the product of all choices.
std::optional<BruteForceResult> BruteForce(const model::Pipeline& pipeline,
                                           const model::Workload& workload);

}  // namespace pipescale::testing
