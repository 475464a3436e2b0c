// MArk (TCC) for a whole pipeline: per task its most accurate variant as a pool across hardware
// classes, each class's batch tuned within the task's budget, provisioned greedily by cost per
// request for the forecast load, with an SLO guard and warm burst classes for spill.
#pragma once

#include "model/pipeline.h"
#include "model/plan.h"
#include "optimizer/registry.h"

namespace pipescale::optimizer {

// MArk per task: the batch tuned per class within the task's budget, the forecast of its load
// over the horizon (spec.forecast, floored at the current rate), the greedy provisioning for the
// steps from the longest startup on, the SLO guard, and the warm burst classes at their minimum.
model::Plan SolveMark(const model::Pipeline& pipeline, const model::Workload& workload,
                      const PlannerInput& input);

}  // namespace pipescale::optimizer
