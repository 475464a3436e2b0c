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
  double load_rps = 0;    // requests per second the plan sends to these replicas
  double budget_ms = 0;   // Loki: the task's latency budget for early dropping, 2 d(b)

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
  // Of the notes, those that say why the plan is Infeasible (for the Feasible condition).
  std::vector<std::string> reasons;

  bool operator==(const SolveReport&) const = default;
};

// Loki: one root-to-sink path through the variants (the augmented graph) and its demand share.
struct VariantPath {
  std::string path;                   // the execution path it refines
  std::vector<std::string> variants;  // one per task of the path
  double share = 0;                   // fraction of the path's demand sent this way
  double accuracy = 0;                // product of the variants' normalised accuracies
  double latency_ms = 0;              // sum of the batch times, at most half the SLO

  bool operator==(const VariantPath&) const = default;
};

// Loki's MostAccurateFirst routing: where requests of `path` leaving `from_variant` of the
// previous task (empty: from the client) go among the variants of `task`, as fractions.
struct RoutingTable {
  std::string path;
  std::string task;
  std::string from_variant;
  std::vector<std::pair<std::string, double>> to;  // (variant, fraction), most accurate first

  bool operator==(const RoutingTable&) const = default;
};

// Replicas with capacity left after routing, for opportunistic rerouting of late requests.
struct BackupWorker {
  std::string task;
  std::string variant;
  double spare_rps = 0;

  bool operator==(const BackupWorker&) const = default;
};

// Loki's phases: more replicas of the most accurate variants, then less accurate variants
// once the cluster is full, then (demand beyond even the fastest variants) serving part of it.
enum class Phase { kNone, kHardwareScaling, kAccuracyScaling, kOverloaded };
const char* PhaseName(Phase phase);

// Kairos and MArk: one task's replicas across hardware classes, for the dispatcher.
struct PoolMember {
  std::string hardware_class;
  int replicas = 0;
  int max_query = 1;        // the largest query (batch) it serves within the task's budget
  double coefficient = 1;   // Kairos C_j: the fastest class's latency / its own, largest query
  double capacity_rps = 0;  // one replica's rate within the budget

  bool operator==(const PoolMember&) const = default;
};

struct Pool {
  std::string task;
  double qos_ms = 0;                // the task's share of its paths' SLOs
  std::vector<PoolMember> members;  // Kairos: the base class first
  std::string spill_class;          // MArk: the warm burst class for requests served late
  double upper_bound_qps = 0;       // Kairos: Eq. 14-15 for the chosen counts

  bool operator==(const Pool&) const = default;
};

struct Plan {
  std::vector<TaskPlan> tasks;
  std::vector<PathPlan> paths;
  SolveReport report;

  // Accuracy-scaling optimizers (Loki) only.
  Phase phase = Phase::kNone;
  double accuracy = 0;         // demand-weighted mean end-to-end accuracy
  double served_fraction = 1;  // of the demand: Loki when Overloaded, Kairos past its budget
  std::vector<VariantPath> variant_paths;
  std::vector<RoutingTable> routing;
  std::vector<BackupWorker> backups;
  // Pool optimizers (Kairos, MArk) only.
  std::vector<Pool> pools;
  double cost_per_hour = 0;
  double upper_bound_qps = 0;        // Kairos: the pipeline's bound, the least over its tasks
  std::vector<double> forecast_rps;  // MArk: total rate per step ahead, [0] = now
  double forecast_step_seconds = 0;

  int TotalReplicas() const;

  bool operator==(const Plan&) const = default;
};

}  // namespace pipescale::model
