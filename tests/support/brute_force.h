// Exhaustive searches written from the model alone: the independent yardsticks for the
// optimizers on small instances.
#pragma once

#include <cstdint>
#include <optional>

#include "model/pipeline.h"

namespace pipescale::testing {

struct BruteForceResult {
  std::int64_t replicas = 0;
  double cost_per_hour = 0;
};

// The minimum total replicas (then cost) over all plans meeting Eq. 3 under the pipeline's
// latency model (the tail model: every replica count of every (class, batch)), or nullopt when
// no plan does. Only for small instances: the search visits the product of all choices.
std::optional<BruteForceResult> BruteForce(const model::Pipeline& pipeline,
                                           const model::Workload& workload);

struct ServedResult {
  double served_fraction = 1;  // of the total demand
  double accuracy = 1;         // demand-weighted, per served request (1 when nothing is served)
};

// Loki's Overloaded step by exhaustion: the largest share of the demand any plan on Loki's
// model serves, then the best accuracy for that share. Loki's model: each (task, variant)
// runs one (hardware class, batch size) with batch sizes the powers of two below the
// variant's max_batch and max_batch itself, or does not run; replicas within
// spec.budget.maxReplicas, each class's maxReplicas and the cost budget; on each loaded path
// that its fastest configs fit, every chain of running variants within half its SLO (each
// task's slowest running batch time, summed); each path's demand split over those chains; a
// variant's load (its input times the factors and edge ratios before it) within its replicas'
// throughput; accuracy normalised by each task's most accurate variant, multiplied along the
// chain. Every variant may serve, whatever the phase. Each allocation of replicas is an LP for
// the shares, solved by the test simplex. Precondition: spec.budget.max_replicas is set.
ServedResult LokiMaxServed(const model::Pipeline& pipeline, const model::Workload& workload);

}  // namespace pipescale::testing
