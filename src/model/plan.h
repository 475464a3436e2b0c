// What an optimizer decides: per task the variant, hardware class, replicas and batch size,
// the predicted latency of every path, and how the solve went.
#pragma once

#include <string>
#include <vector>

namespace pipescale::model {

enum class SolveStatus {
  kOptimal,     // proven optimal for the optimizer's objective
  kFeasible,    // meets every constraint; optimality not proven
  kInfeasible,  // no plan meets the constraints; the plan is the best effort
  kTimeLimit,   // stopped by its budget; the plan is the best found
};

const char* SolveStatusName(SolveStatus status);

struct TaskPlan {
  std::string task;
  std::string variant;
  std::string hardware_class;
  int replicas = 0;
  int batch_size = 1;
  double latency_ms = 0;  // execution time of one batch, d(b)
  double queue_ms = 0;    // worst-case wait to form a batch, (b - 1) / lambda

  bool operator==(const TaskPlan&) const = default;
};

struct PathPlan {
  std::string name;
  double slo_ms = 0;
  double predicted_latency_ms = 0;

  bool operator==(const PathPlan&) const = default;
};

struct SolveReport {
  std::string optimizer;
  SolveStatus status = SolveStatus::kInfeasible;
  double objective = 0;            // total replicas for FA2 and its baselines
  double solve_ms = 0;             // filled by the caller: optimizers read no clock
  std::vector<std::string> notes;  // why a plan is infeasible, which paths, what was repaired

  bool operator==(const SolveReport&) const = default;
};

struct Plan {
  std::vector<TaskPlan> tasks;
  std::vector<PathPlan> paths;
  SolveReport report;

  int TotalReplicas() const;

  bool operator==(const Plan&) const = default;
};

}  // namespace pipescale::model
