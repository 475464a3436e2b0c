#include "reconciler/budget_guard.h"

#include <algorithm>

namespace pipescale::reconciler {
namespace {

template <typename ReplicasOf>
Spend SpendOf(const std::vector<PlannedDeployment>& planned, ReplicasOf replicas_of) {
  Spend out;
  for (const PlannedDeployment& p : planned) {
    out += {replicas_of(p), replicas_of(p) * p.hardware_class->cost_per_hour};
  }
  return out;
}

// Keeps every scale-out at what runs; returns how many it held.
int HoldScaleOuts(std::vector<PlannedDeployment>& planned) {
  int held = 0;
  for (PlannedDeployment& p : planned) {
    if (p.current && p.target > *p.current) {
      p.target = *p.current;
      ++held;
    }
  }
  return held;
}

}  // namespace

bool Exceeds(const model::Budget& budget, const Spend& spend) {
  return (budget.max_replicas && spend.replicas > *budget.max_replicas) ||
         (budget.cost_per_hour && spend.cost_per_hour > *budget.cost_per_hour + 1e-9);
}

GuardOutcome GuardBudget(const model::Budget& budget, std::vector<PlannedDeployment>& planned,
                         const Spend& others) {
  GuardOutcome out;
  out.over_budget = Exceeds(budget, SpendOf(planned, [](const auto& p) { return p.planned; }));
  if (out.over_budget) {
    HoldScaleOuts(planned);
    return out;
  }
  Spend in_transit = SpendOf(planned, [](const auto& p) { return std::max(p.target, p.running); });
  in_transit += others;
  if (!Exceeds(budget, in_transit)) return out;
  for (PlannedDeployment& p : planned) {
    if (p.current && p.planned < *p.current) p.target = p.planned;
  }
  out.waiting = HoldScaleOuts(planned);
  return out;
}

Spend TargetSpend(const std::vector<PlannedDeployment>& planned) {
  return SpendOf(planned, [](const auto& p) { return p.target; });
}

}  // namespace pipescale::reconciler
