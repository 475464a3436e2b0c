// The budget (spec.budget: replicas and dollars per hour) holds at every reconcile: a plan over
// it keeps its scale-outs at what runs; and while replicas move between Deployments each counts
// at what runs or is asked, whichever is more, so scale-outs wait for the scale-ins they need.
#pragma once

#include <vector>

#include "model/pipeline.h"
#include "reconciler/planned.h"

namespace pipescale::reconciler {

// Replicas and dollars per hour.
struct Spend {
  int replicas = 0;
  double cost_per_hour = 0;

  Spend& operator+=(const Spend& o) {
    replicas += o.replicas;
    cost_per_hour += o.cost_per_hour;
    return *this;
  }
};

bool Exceeds(const model::Budget& budget, const Spend& spend);

struct GuardOutcome {
  bool over_budget = false;  // the plan itself needs more than the budget: scale-outs held
  int waiting = 0;           // scale-outs that wait for scale-ins to finish (ScaleInFirst)
};

// Lowers the targets of `planned` as the budget requires. `others` is what the pipeline's
// Deployments outside the plan still run. A Deployment still to be created is never held: it
// would start with nothing. The scale-ins the scale-outs wait for skip their stabilization
// window, which would otherwise hold the new plan back for all of it.
GuardOutcome GuardBudget(const model::Budget& budget, std::vector<PlannedDeployment>& planned,
                         const Spend& others);

// What the targets spend.
Spend TargetSpend(const std::vector<PlannedDeployment>& planned);

}  // namespace pipescale::reconciler
