// The InferencePipeline's status as value types: what the operator decided (the plan applied per
// Deployment, the solver, the totals), what it observed, and what a new leader needs to go on.
// The reconciler decides one; api/status_json.h is its one JSON form, read back leniently.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/cluster_capacity.h"
#include "model/pipeline.h"
#include "model/plan.h"

namespace pipescale::model {

// A condition in the metav1.Condition shape.
struct Condition {
  std::string type;    // Ready, MetricsAvailable, Feasible, PlanApplied
  std::string status;  // "True", "False" or "Unknown"
  std::string reason;
  std::string message;  // "": none (the status leaves it out)
  std::optional<long> observed_generation;
  std::string last_transition_time;  // RFC 3339, as written

  bool operator==(const Condition&) const = default;
};

// The plan in effect: the optimizer's plan with each task's replicas and batch size as they are
// set (stabilized, within the budget, the batch a rollout rule may hold), and the Deployment
// each task runs in. The status keeps neither the solve report (SolverRecord keeps its part) nor
// the router's batch waits (the routing ConfigMap has them).
struct AppliedPlan {
  Plan plan;
  std::vector<std::string> deployments;  // one per plan.tasks, in order

  // The task set in Deployment `deployment`, or nullptr.
  const TaskPlan* Find(const std::string& deployment) const;
  bool operator==(const AppliedPlan&) const = default;
};

// The last decision that changed a Deployment.
struct SolverRecord {
  std::string name;  // the optimizer's
  SolveStatus status = SolveStatus::kOptimal;
  Objective objective;
  double duration_ms = 0;  // the whole decision, the optimizer included

  bool operator==(const SolverRecord&) const = default;
};

// What the pipeline's router did over the last minute (with spec.router).
struct ObservedDataPlane {
  std::map<std::string, double> drops_rps;                        // by reason
  std::map<std::string, std::map<std::string, double>> shed_rps;  // by path, then reason
  double reroutes_rps = 0;
  std::map<std::string, double> spill_share;   // by task
  std::map<std::string, double> pool_waiting;  // by task
  std::map<std::string, double> batch_rows;    // by task
  // Loki: the plan's end-to-end accuracy and the accuracy of the variants that answered (absent
  // when none did), each variant normalised to its task's most accurate.
  std::optional<double> planned_accuracy;
  std::optional<double> served_accuracy;

  bool operator==(const ObservedDataPlane&) const = default;
};

// A query size and its share of the queries.
struct SizeShare {
  int size = 1;
  double share = 0;

  bool operator==(const SizeShare&) const = default;
};

enum class MixSource { kSpec, kMeasured };

// Kairos: the query-size mix planned for and where it came from, the mix measured now and how
// far apart.
struct QuerySizesRecord {
  MixSource source = MixSource::kSpec;
  std::vector<SizeShare> planned;
  std::vector<SizeShare> measured;  // empty: too few queries to tell (left out)
  std::optional<double> shift;      // of the measurement from the mix planned before
  std::string settling_since;       // RFC 3339; "": no shifted mix is settling
  bool operator==(const QuerySizesRecord&) const = default;
};

// One batch size of a profile as the router measured it, beside what the spec declares.
struct ProfilePoint {
  int batch = 1;
  double measured_ms = 0;
  double declared_ms = 0;
  double batches = 0;  // served over the window

  bool operator==(const ProfilePoint&) const = default;
};

// A variant's profile on a class as the router measured it (status.observed.profiles).
struct ObservedProfile {
  ProfileKey key;
  std::vector<ProfilePoint> points;  // the trusted batch sizes (spec.profiles.minBatches), by batch
  std::optional<double> ratio;       // measured over declared at those points; absent: none yet
  double planned_ratio = 1;          // the correction planned from (1: the declared profile)

  bool operator==(const ObservedProfile&) const = default;
};

// The inputs of the last plan.
struct ObservedLoad {
  std::map<std::string, double> path_rates_rps;
  std::optional<std::map<std::string, double>> demand_rps;  // Loki: the smoothed demand
  std::optional<double> arrival_rate_rps;
  std::optional<ObservedDataPlane> data_plane;
  std::optional<QuerySizesRecord> query_sizes;
  std::vector<ObservedProfile> profiles;  // spec.profiles.learn Report or Plan

  bool operator==(const ObservedLoad&) const = default;
};

// One step of the stabilization windows' recommendations: replicas per Deployment name from
// `since` until the next step's `since` (the last step lasts until now).
struct Recommendation {
  double since = 0;  // unix seconds
  std::map<std::string, int> replicas;

  bool operator==(const Recommendation&) const = default;
};

// Steps kept at most; beyond it the two oldest merge (reconciler/stabilize.h), and a status
// with more is read up to this many.
inline constexpr size_t kMaxRecommendations = 32;

// A measured profile the planner adopted (spec.profiles.learn: Plan): the trusted points and the
// ratio that scales the declared curve elsewhere, for the declared profile it corrects.
struct ProfileCorrection {
  ProfileKey key;
  double ratio = 1;
  std::vector<LatencyPoint> points;  // measured, by batch
  std::string declared;              // fingerprint of the declared profile: a new one forgets it

  bool operator==(const ProfileCorrection&) const = default;
};

// spec.scaleToZero.wakeAhead: load returning to a sleeping path, at `at` (unix seconds), and the
// highest rate of the path in the minute after (requests per second).
struct LoadReturn {
  double at = 0;
  double rate_rps = 0;

  bool operator==(const LoadReturn&) const = default;
};

// A path woken ahead of the load a forecast expects: it stays awake without a request until
// `until` (unix seconds), planned for `rate_rps`.
struct WakeForecast {
  double until = 0;
  double rate_rps = 0;

  bool operator==(const WakeForecast&) const = default;
};

// What a new leader cannot rebuild from Prometheus, bounded in size.
// FA2's feedback on what the clients saw (reconciler/slo_feedback.h).
struct PathHeadroom {
  double headroom = 1;     // the path's measured rate is planned times this
  double raised_from = 1;  // its headroom before its last raise

  bool operator==(const PathHeadroom&) const = default;
};
struct Headroom {
  std::map<std::string, PathHeadroom> paths;  // by path; absent: 1
  double quiet_until = 0;  // unix seconds: until the last raise's capacity shows in the window
  double held_until = 0;   // unix seconds: no raise while misses not the model's fill the window

  bool operator==(const Headroom&) const = default;
};

struct StatusMemory {
  std::vector<Recommendation> recommendations;  // oldest first
  std::optional<double> guard_quiet_until;      // MArk's SLO guard: unix seconds
  // Kairos: the measured query sizes adopted, and a fingerprint of the spec.querySizes they
  // replaced; both or neither.
  std::vector<QuerySize> query_mix;
  std::string query_mix_for;
  // The profile corrections planned from: kept when the window holds no batches (no load), and
  // through a failover, so the plan does not fall back to a profile known to be wrong.
  std::vector<ProfileCorrection> profiles;
  // spec.scaleToZero: since when each quiet path has had no request (unix seconds, the first look
  // that saw none); a path with requests is absent.
  std::map<std::string, double> quiet_since;
  // And since when requests have been held at the router's door, by path ("" for none named).
  std::map<std::string, double> held_since;
  std::vector<std::string> sleeping_paths;  // those at 0 replicas when it was written
  // spec.scaleToZero.wakeAhead: each path's recent returns of load after sleep, oldest first,
  // and the paths awake ahead of a forecast return.
  std::map<std::string, std::vector<LoadReturn>> returns;
  std::map<std::string, WakeForecast> awake_ahead;
  Headroom headroom;  // FA2

  bool operator==(const StatusMemory&) const = default;
};

struct PipelineStatus {
  long observed_generation = 0;
  std::vector<Condition> conditions;
  std::optional<AppliedPlan> plan;
  std::optional<SolverRecord> solver;
  std::optional<int> total_replicas;  // what the plan sets, or runs while there is none
  std::optional<double> cost_per_hour;
  std::optional<ObservedLoad> observed;
  std::optional<std::vector<ClassCapacity>> capacity;  // absent when the operator sees no nodes
  std::vector<Unschedulable> unschedulable;
  std::optional<StatusMemory> memory;

  bool operator==(const PipelineStatus&) const = default;
};

}  // namespace pipescale::model
