#include "model/plan.h"

namespace pipescale::model {

const char* SolveStatusName(SolveStatus status) {
  switch (status) {
    case SolveStatus::kOptimal:
      return "Optimal";
    case SolveStatus::kFeasible:
      return "Feasible";
    case SolveStatus::kInfeasible:
      return "Infeasible";
    case SolveStatus::kTimeLimit:
      return "TimeLimit";
  }
  return "Unknown";
}

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kHardwareScaling:
      return "HardwareScaling";
    case Phase::kAccuracyScaling:
      return "AccuracyScaling";
    case Phase::kOverloaded:
      return "Overloaded";
  }
  return "";
}

int Plan::TotalReplicas() const {
  int total = 0;
  for (const TaskPlan& t : tasks) total += t.replicas;
  return total;
}

}  // namespace pipescale::model
