// What an optimizer decides: per task the variant, hardware class, replicas and batch size,
// the predicted latency of every path, and how the solve went.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace pipescale::model {

enum class SolveStatus {
  kOptimal,     // proven optimal for the optimizer's objective
  kFeasible,    // meets every constraint; optimality not proven
  kInfeasible,  // no plan meets the constraints; the plan is the best effort
  kTimeLimit,   // stopped by its budget; the plan is the best found
};

const char* SolveStatusName(SolveStatus status);

// The model server's own queue, where it forms a task's batches (batchSize.env, not the
// router's): how long it waits to fill a batch and how long a request may wait for one before
// the server rejects it, as Triton's dynamic batcher and queue policy do. 0: the server's own.
struct ServerQueue {
  double max_delay_ms = 0;
  double timeout_ms = 0;
  // The most rows the server may put in one batch, past the plan's batch size, when requests
  // queue behind a busy server (its batchSize.env then holds this); 0: the plan's batch size.
  // A dynamic batcher takes what waits when it is free: under a burst the batches grow, and a
  // replica answers more requests per second, where a batch fixed at the plan's size for the
  // planned rate (often 1) leaves the queue to grow.
  int max_batch = 0;
  bool operator==(const ServerQueue&) const = default;
};

// Where the server may grow its batches (ServerQueue::max_batch), the env var beside the
// variant's batchSize.env that holds the plan's batch size: the operator's holds and the
// router's picker and door count on that one, the server on the other.
inline constexpr const char* kPlannedBatchEnv = "PIPESCALE_PLANNED_BATCH_SIZE";

struct TaskPlan {
  std::string task;
  std::string variant;
  std::string hardware_class;
  int replicas = 0;
  int batch_size = 1;
  double latency_ms = 0;  // execution time of one batch, d(b)
  // The longest a request waits before its batch executes, as the optimizer models it: FA2 and
  // its baselines, to fill the batch and behind other batches at the SLO's percentile
  // (optimizer/tail.h), or (b - 1) / lambda under the papers' mean-value model; Loki, behind
  // the batch in service (d(b)); MArk, its batch's wait budget; Kairos, 0 (one query in flight
  // per replica).
  double queue_ms = 0;
  // How long the router lets a batch it forms wait to fill (batchSize.formedBy: router).
  double batch_wait_ms = 0;
  ServerQueue server_queue;  // set only by plans that run the servers' queues (hpa's)
  double load_rps = 0;       // requests per second the plan sends to these replicas; 0: not planned

  bool operator==(const TaskPlan&) const = default;
};

struct PathPlan {
  std::string name;
  double slo_ms = 0;
  double predicted_latency_ms = 0;

  bool operator==(const PathPlan&) const = default;
};

// What an optimizer minimised or maximised, with its unit.
struct Objective {
  double value = 0;
  // "replicas" (FA2, its baselines, Loki's hardware scaling), "accuracy" (Loki's accuracy
  // scaling, 0..1), "servedFraction" (Loki overloaded, 0..1), "dollarsPerHour" (Kairos, MArk).
  std::string unit;

  bool operator==(const Objective&) const = default;
};

struct SolveReport {
  std::string optimizer;
  SolveStatus status = SolveStatus::kInfeasible;
  Objective objective;
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

// One row of Loki's MostAccurateFirst routing tables: where requests of `path` leaving
// `from_variant` of the previous task (empty: from the client) go among the variants of `task`,
// as fractions.
struct VariantRoute {
  std::string path;
  std::string task;
  std::string from_variant;
  std::vector<std::pair<std::string, double>> to;  // (variant, fraction), most accurate first

  bool operator==(const VariantRoute&) const = default;
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
enum class Phase { kHardwareScaling, kAccuracyScaling, kOverloaded };
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

// Loki's part of a plan: the phase, the variant paths and what the router needs.
struct AccuracyScalingPlan {
  Phase phase = Phase::kHardwareScaling;
  double accuracy = 1;  // demand-weighted mean end-to-end accuracy of what is served, 0..1
  std::vector<VariantPath> variant_paths;
  std::vector<VariantRoute> routing;
  std::vector<BackupWorker> backups;

  bool operator==(const AccuracyScalingPlan&) const = default;
};

// Kairos's and MArk's part: each task's replicas across classes, for a dispatcher.
struct PoolPlan {
  std::vector<Pool> pools;
  std::optional<double> upper_bound_qps;  // Kairos: the pipeline's bound, the least over tasks
  std::vector<double> forecast_rps;       // MArk: total rate per step ahead, [0] = now
  double forecast_step_seconds = 0;

  bool operator==(const PoolPlan&) const = default;
};

// A plan: the part every optimizer fills, and the part only one kind of optimizer has.
struct Plan {
  std::vector<TaskPlan> tasks;
  std::vector<PathPlan> paths;
  SolveReport report;
  double cost_per_hour = 0;        // the replicas at their classes' prices
  double floor_cost_per_hour = 0;  // of it, the replicas spec.tasks[].minReplicas added
  double served_fraction = 1;      // of the demand, 0..1: below 1 when Overloaded or over budget
  std::variant<std::monostate, AccuracyScalingPlan, PoolPlan> detail;

  int TotalReplicas() const;
  const AccuracyScalingPlan* accuracy_scaling() const {
    return std::get_if<AccuracyScalingPlan>(&detail);
  }
  AccuracyScalingPlan* accuracy_scaling() { return std::get_if<AccuracyScalingPlan>(&detail); }
  const PoolPlan* pools() const { return std::get_if<PoolPlan>(&detail); }
  PoolPlan* pools() { return std::get_if<PoolPlan>(&detail); }

  bool operator==(const Plan&) const = default;
};

}  // namespace pipescale::model
