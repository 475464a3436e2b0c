// An independent checker of FA2-family plans: recomputes rates, latencies and capacity from the
// pipeline model alone (not from the optimizer's compiled problem) and lists every violation.
#pragma once

#include <string>
#include <vector>

#include "model/pipeline.h"
#include "model/plan.h"

namespace pipescale::testing {

// Violations of Eq. 3 under the pipeline's latency model (spec.slo.latencyModel): a path over its
// SLO, a task whose replicas cannot carry its rate, a
// batch size outside the variant's limit, reported latencies that do not match the profiles.
std::vector<std::string> CheckPlan(const model::Pipeline& pipeline, const model::Workload& workload,
                                   const model::Plan& plan);

// Violations of the spec's bounds by any optimizer's plan: a task row or pool member naming a
// task, variant or class the spec lacks, a batch outside [1, the variant's batchSize.max],
// replicas below 0 or above the class's maxReplicas (or what any plan may ask for). CheckPlan
// includes these.
std::vector<std::string> CheckBounds(const model::Pipeline& pipeline, const model::Plan& plan);

}  // namespace pipescale::testing
