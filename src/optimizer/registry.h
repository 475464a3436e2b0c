// Every optimizer pipescale can run, described once: its name, what it needs of a pipeline,
// what it remembers between plans, what it hands to the data plane and how it solves. Code
// outside optimizer/ (validation, metrics, the reconciler, the CLI, the operator's metrics)
// reads the descriptor instead of branching on an optimizer.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/pipeline.h"
#include "model/plan.h"
#include "optimizer/milp.h"

namespace pipescale::optimizer {

// What a plan hands to the request path, in the ConfigMap `<pipeline>-routing`.
enum class DataPlane {
  kNone,           // nothing: every replica of a Deployment is alike
  kRoutingTables,  // Loki: MostAccurateFirst tables and backups
  // Kairos: per task the replicas across classes; one query in flight per replica, waiting
  // queries matched to replicas at least cost.
  kMatchedPools,
  // MArk: per task the replicas across classes; a request spills to the warm burst class when
  // every main replica would serve it late.
  kSpillPools,
};

// Which Deployments a task runs: what tells two of a task's Deployments apart.
enum class Placement {
  kOneClass,    // one (variant, class) per task, the class picked by the plan
  kPerVariant,  // Loki: one per variant the plan uses, the rest idle at 0
  // Kairos, MArk: a pool of the most accurate variant across its hardware classes, each class
  // a Deployment (at 0 when unused); burst classes only take spill.
  kPerClass,
};

// What the operator observed besides the current rates, for planners that use it.
struct PlannerInput {
  // Per path, its rate at each past planning step (one per interval), oldest first.
  std::map<std::string, std::vector<double>> history;
  // Replicas running now, by "task/hardware class": kept at no launch overhead.
  std::map<std::string, int> running;
  // Their batch sizes: kept while they still meet the budget, as every change restarts pods.
  std::map<std::string, int> running_batch;
  // Every (task, variant, class) with replicas now, by RunningKey, with its Ready pods: Loki
  // holds them on near-ties, and stops a quarter of the Ready pods at most in one plan.
  std::map<std::string, int> running_variants;
  // How many of their pods are not Ready (starting, or Pending for room): Loki keeps to them until
  // they are, as a change of variants before the last one serves restarts what has not served.
  int pods_starting = 0;
  // By RunningKey: the batch the operator's applied plan gave each of them (the status's plan;
  // where the router forms batches no Deployment holds it). Loki keeps it near a threshold.
  std::map<std::string, int> applied_batches;
  // By "task/hardware class": the mean busy share of a Ready pod over the last 15 s and the
  // Ready pods (hpa's metric, HPA's utilisation); a pool without them has no reading.
  std::map<std::string, double> utilization;
  std::map<std::string, int> ready;
  // Paths whose measured tail latency missed the SLO: the SLO guard adds replicas now.
  std::set<std::string> late_paths;
  int guard_step = 1;      // replicas the guard adds to the busiest task of a late path
  MilpSolver milp_solver;  // how MILPs are solved (Loki); empty: CBC in this process
};

// What a planner remembers between decisions (the reconciler keeps it and hands it back).
struct Memory {
  bool demand_ewma = false;  // plans for an EWMA of each path's rate (Loki, alpha 1/2.6)
  // Plans each path for at least the highest rate measured over its scale-down window (Loki;
  // reconciler/demand.h): a rise at once, a fall once the window has passed.
  bool window_peak = false;
  bool rate_history = false;  // one rate per path per interval, to forecast from (MArk)
  // Plans each path for its rate plus its rises over a start-up and an interval (FA2;
  // reconciler/burst.h).
  bool burst_allowance = false;
  // Plans a path that surges for the routers' recent rate at once (FA2; reconciler/surge.h).
  // Loki and MArk meet a burst in the data plane (early drops, the warm burst class) and their
  // re-plans cost more than they buy there: a variant swap restarts pods, a forecast buys GPUs.
  bool plans_for_surges = false;
  // Plans a path whose clients saw its SLO missed for more than its rate (FA2;
  // reconciler/slo_feedback.h).
  bool slo_feedback = false;
  bool slo_guard = false;         // late paths get replicas, then a quiet time (MArk)
  bool measured_factors = false;  // measured multiplicative factors replace the spec's (Loki)
  bool measured_mix = false;      // the router's query sizes replace the spec's on a shift (Kairos)
  // Keeps the batch sizes it applied while they meet the SLOs at the same replicas (FA2).
  bool holds_applied_batches = false;
  // Reads the variants running now, and keeps them on near-ties (Loki).
  bool holds_running_variants = false;
  // Reads the running replicas and their measured utilisation (hpa).
  bool reads_utilization = false;
};

using SolveFn = model::Plan (*)(const model::Pipeline&, const model::Workload&,
                                const PlannerInput&);

struct Descriptor {
  std::string_view name;     // spec.optimizer and `pipescale plan --optimizer`
  std::string_view summary;  // one line for help texts
  bool in_spec = false;      // the operator runs it (spec.optimizer); else only the CLI
  bool needs_paths = true;   // plans per execution path: validation requires one with sloMs
  DataPlane data_plane = DataPlane::kNone;
  Placement placement = Placement::kOneClass;
  Memory memory;
  SolveFn solve = nullptr;
};

// Every descriptor, in the order help texts list them.
std::span<const Descriptor> Optimizers();

// The descriptor named `name`, or nullptr.
const Descriptor* FindOptimizer(std::string_view name);

// The descriptor of a validated pipeline's spec.optimizer (validation checked the name).
const Descriptor& OptimizerOf(const model::PipelineSpec& spec);

// "fa2, loki, kairos, mark" (in_spec only) or every name, for messages.
std::string OptimizerNames(bool in_spec_only);

// Plans with the optimizer named `name`, which must exist. The caller measures wall time and
// fills SolveReport::solve_ms: optimizers read no clock.
model::Plan Solve(const model::Pipeline& pipeline, const model::Workload& workload,
                  std::string_view name, const PlannerInput& input = {});

}  // namespace pipescale::optimizer
