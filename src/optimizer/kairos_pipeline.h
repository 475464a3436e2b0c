// Kairos (HPDC'23) for a whole pipeline: per task, the cheapest pool of its most accurate
// variant across hardware classes whose throughput upper bound covers the task's rate within
// the cost budget; Kairos's own pick when the budget binds.
#pragma once

#include "model/pipeline.h"
#include "model/plan.h"
#include "optimizer/registry.h"

namespace pipescale::optimizer {

struct KairosOptions {
  // Plans so that the upper bound times this covers the demand: measured allowable QPS is
  // 0.85-0.9 of the bound in Kairos's own simulations.
  double derate = 0.85;
  // A cap on any class's count, so the enumeration stays small without a budget.
  int max_per_class = 64;
};

// Per task the cheapest configuration (base class count >= 1) whose derated upper bound covers
// the task's rate. When the cost budget cannot cover the demand, a single-task pipeline takes
// Kairos's pick (the similarity rule over the bound's top 10 within the budget), a longer one
// the largest share of the demand every task covers together within the budget.
model::Plan SolveKairos(const model::Pipeline& pipeline, const model::Workload& workload,
                        const KairosOptions& options = {});

}  // namespace pipescale::optimizer
