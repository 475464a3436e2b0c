// The simulated world of one run: its clock and event queue, the cluster (Deployments, pods,
// nodes), the router and the counters the metrics are read from. Methods live by idea:
// cluster.cc (pods and writes), serve.cc (the model servers), walk.cc (the router),
// observe.cc (metrics and the report), run.cc (the loop and the policies).
#pragma once

#include <array>
#include <set>
#include <span>
#include <unordered_map>

#include "gym/simulation.h"
#include "gym/slab.h"
#include "reconciler/arbiter.h"
#include "reconciler/capacity.h"
#include "routing/walk.h"
#include "trace/arrivals.h"

namespace pipescale::gym::engine {

class World;

// Pipelines that share one node file (tenancy.cc): their pods take the same nodes' room, each
// pipeline's operator counts all of them, and with an arbiter the pools are divided as the
// operator divides them.
struct Tenancy {
  std::vector<std::map<std::string, double>> node_free;  // allocatable less requests
  std::vector<World*> worlds;
  std::unique_ptr<reconciler::Arbiter> arbiter;  // none: first come, first served

  bool AllReady() const;
  std::uint64_t PodsChanged() const;
  std::vector<nlohmann::json> PodObjects() const;
  // A pod of `from` left at its `now_ms`: the others' pending pods may fit now.
  void RoomFreed(const World& from);
};

// A second's answered requests by the router's duration buckets (observe.cc), +Inf last.
using DurationBuckets = std::array<double, 12>;

// Per-second counts, kept for the metrics windows (the longest is 2 minutes; 5 for profiles).
// Paths by index + 1 (0: a walk the pipeline's paths do not name, "unlisted").
struct SecondCounts {
  std::vector<std::map<int, long>> requests;              // by path, by code
  std::vector<DurationBuckets> ok_buckets;                // by path: the 200s' durations
  std::map<std::pair<int, int>, double> served, emitted;  // by (task, variant)
  std::map<std::pair<int, int>, double> variant_ok;       // calls answered by (task, variant)
  std::map<std::string, double> drops, shed;              // by reason; by "path/reason"
  double reroutes = 0;
  std::map<int, double> spills, task_calls;             // by task
  std::map<int, std::pair<double, double>> batch_rows;  // by task: (sum, count)
  std::map<int, double> query_rows;                     // requests by their rows
  std::map<int, double> task_arrivals;  // by task: requests that entered a path through it
  std::map<int, double> path_arrivals;  // by path: requests that entered it
  // Batch service by (Deployment, rows): (seconds, batches).
  std::map<std::pair<int, int>, std::pair<double, double>> batch_service;
  // Ready pods' busy seconds and Ready pod-seconds by (task, class): HPA's utilisation.
  std::map<std::pair<int, int>, std::pair<double, double>> busy_ready;

  explicit SecondCounts(size_t paths = 0) : requests(paths + 1), ok_buckets(paths + 1) {}
};

class World {
 public:
  World(model::Pipeline p, nlohmann::json o, const Options& opts);
  // Pinned where it is built: `arrivals` reads the trace in this World's own `options`.
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  World(World&&) = delete;
  World& operator=(World&&) = delete;
  ~World() = default;

  // Runs to the end; the report of what happened.
  PolicyReport Run();
  // The same in steps, for runs that share a clock (tenancy.cc): Begin, then HandleNext while
  // NextAt is finite (the earliest first across the worlds), then End.
  void Begin();
  double NextAt() const;
  void HandleNext();
  PolicyReport End();
  // The operator is asked to look again (a pod changed, or its share may have moved).
  void Nudge();

  // cluster.cc
  void ApplyDecision(const reconciler::Decision& decision);
  void SetReplicas(int deployment, int replicas);  // a baseline's write
  int EnsureDeployment(int task, int variant, int hw_class, int batch);
  void Reconcile();     // pods to their Deployments' replicas and revisions
  void PlacePending();  // pending pods onto nodes with room
  void OnPodReady(int pod);
  void OnPodGone(int pod);
  // The Deployments as the apiserver would return them now, into `out` (kept between calls).
  void UpdateDeploymentObjects(std::map<std::string, nlohmann::json>& out);
  std::vector<nlohmann::json> PodObjects() const;

  // serve.cc
  void Enqueue(int pod, std::int64_t call);
  void OnCallArrives(std::int64_t call);  // a call's, at its pod's queue
  void MaybeStart(int pod);
  void RejectExpired(int pod);
  void OnBatchDone(int pod);
  void OnCallDelivered(std::int64_t id);  // a call's
  double ServiceMs(int pod, int rows) const;

  // walk.cc
  void OnArrival(int path, int rows);
  void RecordRequest(int path, int code, const std::string& reason, double ms, bool cold);
  // A walk starts or stops waiting at the door: the router's door-waiting gauge.
  void AtDoor(Walk& w, bool waiting);
  void OnDoorPoll(std::int64_t id);  // a walk's
  void StartVisit(std::int64_t id);
  void OnCallDone(std::int64_t id, double queue_ms);
  void OnCallRejected(std::int64_t id);  // a call's: tried once more elsewhere, or failed
  void OnBatcherDue(int b);
  void OnPoolExpire(std::int64_t id);  // a visit's
  void RebuildRouting();               // from the routing ConfigMap and the Ready pods

  // observe.cc
  model::MetricsSnapshot Snapshot() const;
  void EndSecond();
  void RecordInterval();
  PolicyReport Finish();

  // The event queue.
  void At(double at_ms, EventKind kind, std::int64_t a = 0, std::int64_t b = 0);
  double now_ms() const { return now_ms_; }

 private:
  friend struct Access;
  friend struct Tenancy;
  // cluster.cc
  void CreatePod(int deployment);
  void Terminate(int pod);
  bool Fits(const nlohmann::json& node, int deployment) const;
  void WriteDeployment(const reconciler::DeploymentWrite& write);
  int DeploymentFor(const nlohmann::json& written);
  // walk.cc
  void EndVisit(std::int64_t id);
  void FailVisit(std::int64_t id, routing::Failure failure);
  void EndWalk(std::int64_t id);
  void Send(std::int64_t id);  // a visit's
  void SendCall(Call call, int pod);
  // variant -1: any of the task's pods; never `tried` (a pod index; -1: none).
  int PickPod(int task, int variant, int tried = -1);
  // The router's batcher of `variant` at `task` (-1: the task's first) while the plan forms
  // batches there, as an index into `batchers`; -1 when none.
  int BatcherFor(int task, int variant) const;
  void ResetWalker();  // on the graph and Loki's tables as they are now
  void MatchPool(int task);
  void OnAnswered(std::int64_t id, int task, int variant);
  const std::vector<int>& NextParameters(int task, int variant);  // by edge; until the next call
  // Where a visit of `task` on `path` goes next with `counts` (by edge), as graph->Next says.
  const Result<std::vector<routing::Call>>& NextOf(int path, int task,
                                                   const std::vector<int>& counts);
  void ReadDataPlane();
  void RebuildPools();
  // observe.cc
  template <typename F>
  void ForSeconds(double window, F&& f) const;
  double Rate(int path, double window) const;  // path -2: every path
  model::DataPlaneSnapshot DataPlane() const;
  std::map<double, double> QuerySizes() const;
  // By "task/class": the mean busy share of a Ready pod over the last kUtilizationWindowS, as
  // the operator's `utilization` query reads it.
  std::map<std::string, double> Utilization() const;
  // By task: how bursty its arrivals were over the last routing::kDispersionWindowSeconds, as the
  // router measures it.
  std::map<std::string, double> Dispersions() const;
  // By path: its arrival rate over the last routing::kRecentRateSeconds, as the router measures it.
  std::map<std::string, double> RecentRates() const;
  model::BatchTimings Timings() const;
  // run.cc
  void Control();
  void PodChanged();
  void WatchSurges();
  void WatchDoor(int path);
  void OperatorStep();
  void AutoscalerStep();
  void ScheduleArrival();
  bool ReadyToStart() const;
  void OnSecond();
  void StartTrace();
  void Dispatch(const Event& e);

 public:
  // The run.
  model::Pipeline pipeline;
  nlohmann::json object;
  Options options;
  std::mt19937_64 rng;  // the world's chance (start-ups, picks, objects found), not the clients'
  double now_ms_ = 0, end_ms_ = 0;
  std::uint64_t handled_ = 0;  // events, for the progress bar
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::uint64_t seq = 0;

  // The cluster.
  std::vector<Deployment> deployments;
  std::map<std::string, int> deployment_index;
  std::vector<Pod> pods;
  std::vector<int> live_pods;  // not gone
  std::vector<nlohmann::json> nodes;
  std::vector<std::map<std::string, double>> node_free;  // allocatable less requests
  Tenancy* tenancy = nullptr;  // set when pipelines share the nodes: its node_free is theirs
  std::vector<std::map<std::string, double>>& Free() {
    return tenancy != nullptr ? tenancy->node_free : node_free;
  }
  std::optional<reconciler::ClusterCapacity> counted;  // as the pods last counted
  std::optional<nlohmann::json> routing_config_map;
  std::map<std::string, nlohmann::json> router_objects;  // by resource (plural)

  // The router.
  std::unique_ptr<routing::Graph> graph;
  std::shared_ptr<const routing::LokiTables> loki;
  routing::Policy policy;
  std::optional<routing::Walker> walker;  // over `graph`, `loki` and `policy`
  std::vector<std::vector<int>> ready;    // Ready pods by task
  struct Pool {
    std::shared_ptr<routing::KairosQueue> kairos;  // replicas are pod indices
    bool has_replicas = false;
    int spill_class = -1;
    double rt_max_ms = 0;
  };
  std::map<int, Pool> pools;                                           // by task
  std::map<int, std::shared_ptr<routing::KairosQueue>> kairos_queues;  // kept across rebuilds
  std::optional<std::pair<optimizer::DataPlane, model::PoolPlan>> pool_plan;
  std::string data_plane_text;  // the ConfigMap's parts last read
  struct Batcher {
    int task = 0, variant = 0;
    std::unique_ptr<routing::BatchFormer> former;
    int batch = 1;
    double wait_ms = -1;  // the plan's; -1: the plan no longer forms batches here
    double due_ms = -1;   // a kBatcherDue scheduled for then
  };
  std::vector<Batcher> batchers;
  std::map<std::pair<int, int>, int> batcher_of;  // (task, variant) -> index
  std::vector<double> pod_weight, pod_batch_ms;   // per pod, as the router profiles it
  std::vector<int> pod_router_batch;              // per pod: the batch it is profiled at

  Slab<Walk> walks;
  Slab<Visit> visits;
  Slab<Call> calls;

  // The operator or the baseline.
  const optimizer::Descriptor* optimizer = nullptr;
  std::shared_ptr<const api::ParsedPipeline> parsed;
  std::vector<int> baseline_deployment;  // by task
  std::unique_ptr<Autoscaler> autoscaler;
  int fixed = 0;
  reconciler::Observed observed;  // what the operator reads, kept between its reconciles
  std::map<std::string, nlohmann::json> deployment_objects;  // as the apiserver holds them
  double periodic_at_ms = -1, event_at_ms = -1;              // the reconciles queued
  // The operator's steady clock at the run's start: its work queue brings a pipeline back at a
  // phase of its interval fixed by the pipeline's key against that clock (controller::Spread),
  // which falls anywhere on the trace; each seed draws its own.
  double steady_clock_at_start_ms = 0;
  std::string pipeline_key;  // namespace/name, as the operator's work queue keys it
  std::uint64_t pods_changed = 0, pods_counted = ~std::uint64_t{0};  // for the capacity

  // What was seen.
  std::deque<SecondCounts> seconds;  // the last ones, newest last
  SecondCounts current;
  // The counts the operator's queries read over the last kMinute seconds, kept as a running sum
  // (whole counts, so adding and taking away is exact): a reconcile reads them at once.
  static constexpr size_t kMinute = 60;
  static constexpr double kUtilizationWindowS = 15;
  SecondCounts last_minute;
  // Batch service by (Deployment, rows) over the profiles' window: (seconds, batches).
  std::map<std::pair<int, int>, std::pair<double, double>> profile_window;
  PolicyReport report;
  std::vector<std::vector<double>> all_ok_ms;   // by path + 1
  std::vector<std::vector<double>> cold_ok_ms;  // by path + 1: of the cold requests
  std::map<int, long> door_waiting;             // walks at the door now, by path (-1: none named)
  std::map<int, long> cold_backlog;  // walks held for their path's pods and not ended, by path
  std::map<int, double> pool_waiting_max;
  double replica_seconds_ready = 0;
  struct IntervalPath {
    long sent = 0, within = 0;
    std::vector<double> ok_ms;
  };
  std::vector<IntervalPath> interval_paths;  // since the last report row, by path + 1
  std::vector<PathOutcome> path_outcomes;    // by path + 1
  long arrivals_in_row = 0;
  double last_row_ms = 0;
  double trace_start_ms = -1;                    // when the first request may go (every task Ready)
  std::optional<trace::ArrivalStream> arrivals;  // pipescale-loadgen's for options.seed
  double accuracy_sum = 0, accuracy_count = 0;

 private:
  // The walk's view of the task loads: the Ready pods as the router profiles them, the batches
  // it forms, Kairos's queues and MArk's pools.
  class Loads final : public routing::TaskLoads {
   public:
    explicit Loads(const World& world) : w_(world) {}
    int PodCount(int task) const override;
    routing::PodLoad Pod(int task, int index) const override;
    double FillMs(int task, int variant) const override;
    std::optional<double> MatchedMs(int task, int rows) const override;
    std::optional<routing::SpillPool> Spill(int task) const override;
    // The simulator's pods do not crash: none restarts.
    bool Restarting(int /*task*/) const override { return false; }

   private:
    const World& w_;
  };
  const Loads loads_{*this};
  // Scratch reused by every pick, so that it allocates nothing once warm.
  routing::PodPick pick_;
  std::vector<int> next_counts_;
  std::vector<int> next_key_;  // path, task, then the counts by edge
  std::map<std::vector<int>, Result<std::vector<routing::Call>>> next_hops_;
};

// The World `options` set up for `pipeline_object` (simulate.cc): kInvalid as Simulate says.
Result<std::unique_ptr<World>> MakeWorld(const nlohmann::json& pipeline_object,
                                         const Options& options);

}  // namespace pipescale::gym::engine
