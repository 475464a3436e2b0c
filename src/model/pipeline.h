// The InferencePipeline as value types: a DAG of tasks with model variants and their latency
// profiles per hardware class, execution paths with SLOs, and the operator's knobs. Values here
// were validated by api/ and are trusted by every later layer.
#pragma once

#include <compare>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/latency.h"

namespace pipescale::model {

enum class Mode { kApply, kRecommend };
enum class ForecastMethod { kNone, kEwma, kHoltWinters, kLinear };

// JSON the operator passes through to the objects it writes (a variant's pod template, a
// class's tolerations): checked by api/ where the spec is parsed, then immutable and shared by
// every copy of the pipeline, so no later reader parses it again from text (and can fail).
class PassThroughJson {
 public:
  PassThroughJson() = default;  // none
  explicit PassThroughJson(nlohmann::json value);

  // The value; null when there is none.
  const nlohmann::json& get() const;
  bool operator==(const PassThroughJson& other) const;

 private:
  std::shared_ptr<const nlohmann::json> value_;
};

// What a replica of a hardware class costs and needs from the cluster.
struct HardwareClass {
  std::string name;
  std::map<std::string, std::string> requests;  // resources.requests, e.g. cpu: "4"
  std::map<std::string, std::string> limits;    // resources.limits, e.g. nvidia.com/gpu: "1"
  std::map<std::string, std::string> node_selector;
  PassThroughJson tolerations;  // a list, passed through to the pod template untouched
  double cost_per_hour = 0;
  double startup_seconds = 0;  // launch overhead until a new replica serves (MArk)
  std::optional<int> max_replicas;
  // On a cluster shared with other pipelines, the replicas of the class the arbiter leaves the
  // pipeline whatever the others' priorities (reconciler/arbiter.h), up to what its plan needs.
  std::optional<int> guaranteed_replicas;
  // A burst class (MArk's spot/burst pool) is kept warm at this many replicas per task and
  // takes only the requests the main pool would serve late; the planners never size it.
  std::optional<int> burst_min_warm;

  bool operator==(const HardwareClass&) const = default;
};

// A variant's latency profile on one hardware class.
struct Profile {
  std::string hardware_class;
  LatencyProfile latency;

  bool operator==(const Profile&) const = default;
};

// Which profile a measurement or a correction is of: a variant of a task on a hardware class.
struct ProfileKey {
  std::string task;
  std::string variant;
  std::string hardware_class;

  auto operator<=>(const ProfileKey&) const = default;
};

struct Variant {
  std::string name;
  double accuracy = 1;
  double multiplicative_factor = 1;  // requests emitted per request served (Loki)
  PassThroughJson pod_template;      // an object (api/pod_template.h), built on by Deployments
  std::string deployment_name;       // adopt an existing Deployment instead of creating one
  // The environment variable that tells the model server its batch size; "" when the router
  // forms the batches (batchSize.formedBy: router) and the server takes each as one request.
  std::string batch_env = "MAX_BATCH_SIZE";
  int max_batch = 32;
  std::vector<Profile> profiles;

  // The profile for `hardware_class`, or nullptr when the variant cannot run there.
  const Profile* FindProfile(const std::string& hardware_class) const;
  bool RouterBatches() const { return batch_env.empty(); }

  bool operator==(const Variant&) const = default;
};

// A DAG edge: requests leaving a task continue to `task`, `ratio` of them on average.
struct Edge {
  std::string task;
  double ratio = 1;

  bool operator==(const Edge&) const = default;
};

struct Task {
  std::string name;
  std::vector<Edge> next;
  std::vector<Variant> variants;
  // The fewest replicas the task runs whatever the plan (spec.tasks[].minReplicas; 0: none): a
  // second where a pod's restart would cost the task's paths their SLO (optimizer/floors.h).
  int min_replicas = 0;

  // The variant FA2 and the batching baselines scale: the most accurate, first listed on ties.
  const Variant& MostAccurateVariant() const;
  // The variant named `variant_name`, or nullptr.
  const Variant* FindVariant(const std::string& variant_name) const;

  bool operator==(const Task&) const = default;
};

// Who the router refuses first when the cluster is full (the Gateway API Inference Extension's
// criticality): sheddable paths, then standard ones, critical ones last.
enum class Priority { kCritical, kStandard, kSheddable };

// An execution path: the tasks a request visits, in order, with its end-to-end SLO.
struct Path {
  std::string name;
  std::vector<std::string> tasks;
  double slo_ms = 0;
  double weight = 1;  // share of the total rate when only a total is known
  Priority priority = Priority::kStandard;

  bool operator==(const Path&) const = default;
};

// How a plan predicts a task's latency: at the SLO's percentile, with the queueing of random
// arrivals (the default, optimizer/tail.h), or as the papers do, at the mean.
enum class LatencyModel { kTail, kMean };

struct Slo {
  double latency_ms = 0;  // 0: not set
  double percentile = 99;
  LatencyModel model = LatencyModel::kTail;

  bool operator==(const Slo&) const = default;
};

struct Budget {
  std::optional<int> max_replicas;
  std::optional<double> cost_per_hour;

  bool operator==(const Budget&) const = default;
};

struct MetricsSpec {
  std::string prometheus_url;
  std::map<std::string, std::string> queries;  // PromQL overrides by name, e.g. arrivalRate

  bool operator==(const MetricsSpec&) const = default;
};

struct Forecast {
  ForecastMethod method = ForecastMethod::kNone;
  double horizon_seconds = 0;

  bool operator==(const Forecast&) const = default;
};

// HPA vocabulary on purpose: users already know what these windows do.
struct Behavior {
  double scale_down_window_seconds = 300;
  double scale_up_window_seconds = 0;
  // scaleUp.burstAllowance: root-mean-square rises of each path's rate over a start-up and an
  // interval that FA2 keeps capacity for (reconciler/burst.h); 0 plans for the measured rate.
  // Off by default until the cluster in a box confirms what the simulator measured for 2.5
  // (bench/README.md, "Capacity for bursts").
  double burst_allowance = 0;

  bool operator==(const Behavior&) const = default;
};

// Kairos: clients send queries of several sizes (a batch each); how often each size comes.
struct QuerySize {
  int size = 1;
  double weight = 1;

  bool operator==(const QuerySize&) const = default;
};

// What Loki's router does with a request that would fall behind (the paper's ablation, its
// Fig. 7, weakest first); the router runs kReroute unless told.
enum class DropPolicy { kNone, kLastTask, kPerTask, kReroute };
// "none", "last-task", "per-task", "reroute": spec.router.dropPolicy and --drop-policy.
inline constexpr std::pair<DropPolicy, const char*> kDropPolicyNames[] = {
    {DropPolicy::kNone, "none"},
    {DropPolicy::kLastTask, "last-task"},
    {DropPolicy::kPerTask, "per-task"},
    {DropPolicy::kReroute, "reroute"}};
std::optional<DropPolicy> ParseDropPolicy(std::string_view name);

// The pipeline's front door (pipescale-router), when it asks for one: the operator runs it as
// a Deployment and a Service and sizes it from the measured arrival rate.
struct RouterSpec {
  std::string image = "pipescale/router:dev";
  // Two: a router's death or drain is not an outage, and the replicas share their counts at the
  // pods (router/peers.h), so two doors admit as one does (bench/README.md).
  int min_replicas = 2;
  int max_replicas = 8;
  double requests_per_second_per_replica = 10000;  // bench/README.md: one core's, with margin
  int threads = 1;                                 // event loops (cores) per replica
  std::string drop_policy = "reroute";             // a Loki plan's late requests (DropPolicy)
  // A request body past this is answered 413 before the router reads the rest (--max-body-bytes).
  // 4 MiB: an image of about 1000x1000 as an OIP JSON tensor, and the model servers' own default.
  std::int64_t max_body_bytes = 4 << 20;

  bool operator==(const RouterSpec&) const = default;
};

// Whether the operator learns the variants' latency profiles from what the router measures
// (spec.profiles.learn): not at all, to report drift beside the declared profile, or also to plan
// from the corrected profile.
enum class ProfileLearning { kOff, kReport, kPlan };

// spec.profiles: how measured batch times are trusted and compared with the declared profiles.
struct ProfilesSpec {
  ProfileLearning learn = ProfileLearning::kReport;
  // Measured over declared past which a profile counts as drifted (ProfileAccurate=False).
  double tolerance = 0.15;
  int min_batches = 30;         // batches of one size before its measurement is trusted
  double window_seconds = 300;  // the forgetting window: older batches no longer count

  bool operator==(const ProfilesSpec&) const = default;
};

// What wakes with a request after idleness (spec.scaleToZero.wake): the tasks of its path, or
// every task of the pipeline.
enum class WakeScope { kPath, kPipeline };

// spec.scaleToZero: after `after_idle_seconds` without a request on a path, the tasks no running
// path needs go to 0 replicas; the router holds a request for a sleeping path until its pods are
// Ready (at most `hold_seconds`; 0: its slowest class's start-up plus its SLO) and the operator
// wakes the path at the first one. Off (nullopt) by default: spec.minRate keeps a warm floor.
// What a wake takes besides the classes' startupSeconds, which the default hold allows for: the
// router's scrape and the operator's look (a second or two each), the scheduler, the node
// starting the container and the readiness probe. Measured at 3-5 s on the cluster in a box; a
// request held this much longer is answered where a tighter hold would refuse it.
inline constexpr double kWakeAllowanceSeconds = 30;

// A router told to stop (SIGTERM) reports not ready for kRouterDrainSeconds while it serves on
// (clients move to another replica), then finishes the requests it has: for
// RouterFinishSeconds, which its pod's grace period allows for (api/router_objects.cc).
inline constexpr int kRouterDrainSeconds = 5;
// At least 20 s, and the longest a path holds a request for its pods (`longest_hold_ms`, a
// path's ColdHoldMs) with a second to answer it: a request held through a wake or a restart is
// answered, not cut off by the router's own exit.
double RouterFinishSeconds(double longest_hold_ms);

// spec.scaleToZero.wakeAhead: a sleeping path wakes ahead of load that returned at this time of
// the period in each of the last `confirmations` periods (0: never), so its first requests find
// it warm (reconciler/wake_ahead.h). A daily period by default.
struct WakeAhead {
  double period_seconds = 86400;
  int confirmations = 2;

  // How far from this time of the period a return still counts as the same one: a twentieth of
  // the period, at most 10 minutes (a daily pattern's morning varies by minutes, not hours).
  double ToleranceSeconds() const { return period_seconds / 20 < 600 ? period_seconds / 20 : 600; }

  bool operator==(const WakeAhead&) const = default;
};

struct ScaleToZero {
  double after_idle_seconds = 300;
  WakeScope wake = WakeScope::kPath;
  double hold_seconds = 0;
  WakeAhead wake_ahead;

  bool operator==(const ScaleToZero&) const = default;
};

struct PipelineSpec {
  std::string optimizer = "fa2";  // a name of optimizer/registry.h; api checks it
  Mode mode = Mode::kApply;
  double interval_seconds = 10;
  std::vector<HardwareClass> hardware_classes;
  std::vector<Task> tasks;
  std::vector<Path> paths;
  Slo slo;
  Budget budget;
  MetricsSpec metrics;
  Forecast forecast;
  Behavior behavior;
  std::vector<QuerySize> query_sizes;  // empty: every query is one request
  std::optional<RouterSpec> router;    // none: requests reach the model pods another way
  // The load planned for at the least, in requests per second entering the pipeline, spread
  // over the paths by weight: the warm capacity ready before the first request (0: none).
  double min_rate_rps = 0;
  ProfilesSpec profiles;
  std::optional<ScaleToZero> scale_to_zero;
  // The PriorityClass of the model and router pods ("": the cluster's default). The scheduler
  // preempts pods of a lower priority to place them, so their room counts as the pipeline's.
  std::string priority_class_name;

  bool operator==(const PipelineSpec&) const = default;
};

struct Pipeline {
  std::string name;
  std::string namespace_name = "default";
  long generation = 0;
  PipelineSpec spec;

  // Index of the task or hardware class with that name, or -1.
  int TaskIndex(const std::string& task) const;
  int HardwareClassIndex(const std::string& hardware_class) const;
  // The variant `variant` of task `task`, or nullptr.
  const Variant* FindVariant(const std::string& task, const std::string& variant) const;
  // Whether the router forms the batches of any variant (batchSize.formedBy: router).
  bool RouterBatches() const;
  // How long the router holds a request for path `path` (an index of spec.paths) while a task of
  // it has no Ready pod (asleep under scale to zero, or its pod restarting): the slowest start-up
  // among the classes its tasks' variants run on, plus kWakeAllowanceSeconds, plus its SLO;
  // spec.scaleToZero.holdSeconds where set.
  double ColdHoldMs(size_t path) const;
  // What waking path `path` takes: the slowest start-up among the classes its tasks' variants
  // run on (every task's for an index past spec.paths), plus kWakeAllowanceSeconds.
  double WakeSeconds(size_t path) const;
  // The longest of the paths' ColdHoldMs (0 without paths).
  double LongestColdHoldMs() const;
  // RouterFinishSeconds for LongestColdHoldMs.
  double RouterFinishSeconds() const;

  bool operator==(const Pipeline&) const = default;
};

// Measured (or what-if) load: requests per second entering each execution path.
struct Workload {
  std::map<std::string, double> path_rates_rps;
  // By task: how bursty its arrivals are, the index of dispersion of their per-second counts as
  // the router measured it (routing/dispersion.h). A task without one is planned for Poisson
  // arrivals (1).
  std::map<std::string, double> task_dispersion;

  bool operator==(const Workload&) const = default;
};

}  // namespace pipescale::model
