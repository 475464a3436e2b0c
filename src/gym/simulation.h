// The whole loop of one pipeline as a discrete-event simulation: arrivals from a trace, the
// router's walk with its pure policies (routing/), model pods that batch and serve as the emulated
// model server does, pods that wait for node room and start-up, and every interval the operator's
// own Decide (or a baseline autoscaler) on the metrics the run would have exported. Single
// threaded and deterministic for a seed; time is simulated, never read.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "gym/autoscaler.h"
#include "gym/report.h"
#include "model/pipeline.h"
#include "reconciler/decide.h"
#include "routing/batching.h"
#include "routing/graph.h"
#include "routing/loki.h"
#include "routing/pools.h"
#include "routing/walk.h"
#include "trace/trace.h"

namespace pipescale::gym {

struct Options {
  // An optimizer of optimizer/registry.h run by the operator's Decide (the pipeline's own when
  // empty), or a baseline: "hpa", "keda", "kpa", "fixed:N" (N replicas per task).
  std::string policy;
  trace::Trace trace;
  double seconds = 0;  // simulated; 0: the trace's length
  double RunSeconds() const { return seconds > 0 ? seconds : trace.Seconds(); }
  // The clients' requests are pipescale-loadgen's for this seed (trace/arrivals.h): the same
  // requests on the cluster and here. The rest of the run's chance (start-ups, picks among equal
  // pods, objects found) is drawn from `world_seed` where given, else from the seed too.
  std::uint64_t seed = 42;
  std::optional<std::uint64_t> world_seed;
  std::vector<nlohmann::json> nodes;  // Node objects (api::ParseNodesFile); none: unbounded room
  // What a scaled-out pod takes past its class's startupSeconds to turn Ready for the router:
  // the ReplicaSet's create, the scheduler's bind, the node agent's start, the first readiness
  // probe to pass (1 s period). The cluster in a box measures 0.39-0.69 s, mean 0.55
  // (bench/pod-start.sh): this much, and then a uniform share of the spread, each pod its own.
  double pod_start_overhead_s = 0.4;
  double pod_start_spread_s = 0.3;
  // What a call takes past its batch's d(b): the HTTP round trip and the server's timer overshoot,
  // measured at 1-3 ms on this machine (tests/integration/router/batch_service_test.cc prints it).
  // Counted in the pod's time, as a longer batch.
  double call_overhead_ms = 2;
  // The part of the round trip outside the pod's busy time: the call reaches the pod's queue
  // this long after the router sends it, and its answer the router this long after its batch.
  double call_to_pod_ms = 0;
  double call_from_pod_ms = 0;
  double interval_row_s = 10;                 // the report's per-interval rows
  std::function<void(double done)> progress;  // share of the run simulated, now and then
};

// Runs `pipeline_object` (an InferencePipeline as kubectl would apply it, validated) under
// `options`. kInvalid when the policy is unknown or the pipeline is not valid for it.
Result<PolicyReport> Simulate(const nlohmann::json& pipeline_object, const Options& options);

// One of several pipelines that share a node file, with its own clients' trace.
struct Tenant {
  nlohmann::json pipeline;  // as Simulate takes it
  trace::Trace trace;
};

// Runs `tenants` on `options.nodes` in one simulated time, each under its own optimizer, their
// traces starting together once every one is Ready: with `divide`, the operator's arbiter divides
// the pools they share (reconciler/arbiter.h); without, each plans within the room it finds,
// first come, first served. A report per tenant, in their order, its policy "shared" or
// "first-come". kInvalid without nodes, for two tenants of one name, or as Simulate says.
Result<std::vector<PolicyReport>> SimulateTogether(const std::vector<Tenant>& tenants,
                                                   const Options& options, bool divide);
inline constexpr const char* kShared = "shared";
inline constexpr const char* kFirstCome = "first-come";

// The policy that runs the spec's own optimizer with spec.scaleToZero off: what scale to zero
// saves against, beside the pipeline's own row.
inline constexpr const char* kAlwaysWarm = "always-warm";

// The rest is the engine, exposed for its tests.
namespace engine {

enum class EventKind : std::uint8_t {
  kArrival,        // a request enters the router
  kDoorPoll,       // a request waiting at the door for pods looks again
  kPodWake,        // a pod's partial batch may be due
  kBatchDone,      // a pod's batch is served
  kBatcherDue,     // a router batch's wait budget ends
  kPodReady,       // a started pod passes its readiness probe
  kPodGone,        // a terminating pod has drained
  kControl,        // the operator or the autoscaler decides
  kSecond,         // the per-second bookkeeping: samples, placement of pending pods
  kPoolExpire,     // a request waiting in Kairos's queue reaches its deadline
  kCallDelivered,  // a call's answer reaches the router
  kCallArrives,    // a call sent by the router reaches its pod's queue
};

struct Event {
  double at_ms = 0;
  std::uint64_t seq = 0;  // ties in order of scheduling, for determinism
  EventKind kind = EventKind::kArrival;
  std::int64_t a = 0, b = 0;
  bool operator>(const Event& o) const { return at_ms != o.at_ms ? at_ms > o.at_ms : seq > o.seq; }
};

// clang-tidy 14 blames the implicit members of these aggregates for what their members'
// allocations may throw, as with reconciler::Decision; nothing here is declared noexcept.
struct Deployment {  // NOLINT(bugprone-exception-escape)
  std::string name;
  int task = 0, variant = 0, hw_class = 0;  // indices into the pipeline's spec
  nlohmann::json object;                    // as the operator wrote it
  int replicas = 0;
  int batch = 1;                // the server's batch (its batch env); 1 when the router forms them
  int planned_batch = 1;        // the plan's, as the router reads it (routing::PlannedBatch)
  double max_wait_ms = 1000;    // the model server's --max-wait-ms
  double queue_timeout_ms = 0;  // and its queue timeout (0: never)
  double latency_scale = 1;     // PIPESCALE_LATENCY_SCALE
  // A baseline's server (optimizer/baseline_deployment.h): its dynamic batcher and queue policy,
  // which hold whatever the Deployment's writes say of batches.
  struct ServerBatcher {
    int batch = 1;
    double max_delay_ms = 0;
    double queue_timeout_ms = 0;
  };
  std::optional<ServerBatcher> server;
  std::uint64_t revision = 0;  // bumped when the pod template changes (a rollout)
  bool object_changed = true;  // written since the operator last read it
};

struct Pod {
  enum class State { kPending, kStarting, kReady, kTerminating, kGone };
  int deployment = 0;
  std::uint64_t revision = 0;
  State state = State::kPending;
  int node = -1;
  double created_ms = 0;
  // The server.
  int batch = 1;
  int planned_batch = 1;  // the batch the router profiles the pod at
  double max_wait_ms = 1000;
  double latency_scale = 1;
  double queue_timeout_ms = 0;        // a call waiting longer is rejected (0: never)
  std::deque<std::int64_t> queue;     // calls waiting for a batch
  std::vector<std::int64_t> serving;  // the batch in service
  int outstanding = 0;                // calls sent and not answered
  double wake_at_ms = -1;             // a kPodWake scheduled for then
  double busy_ms = 0;                 // in the current second
  double busy_since_ms = -1;
  double held_ms_area = 0;  // calls held x ms, in the current second (concurrency)
  double held_since_ms = 0;
};

// A call of the router to a pod: one request's visit, or a batch the router formed of several.
struct Call {
  std::vector<std::int64_t> visits;
  int rows = 0;
  int pod = -1;
  double sent_ms = 0, queued_ms = 0;
  double queue_ms = 0;    // waited at the pod for its batch, as the answer reports
  bool rejected = false;  // the pod's queue policy turned it away (a 503)
};

// One request at one task.
struct Visit {
  std::int64_t walk = 0;
  int task = 0;
  int variant = -1;                       // planned, or -1: any pod of the task
  int from_task = -1, from_variant = -1;  // what answered before it, for Loki's routes
  std::vector<int> trail;  // tasks so far, kept only for a request whose path the models decide
  bool kairos_waiting = false;
  double accuracy = 1;  // the product of the variants' accuracies so far
  int attempt = 0;      // calls made for it so far, less one
  int tried_pod = -1;   // the pod that turned its last call away
};

struct Walk {
  routing::Walk state;      // the router's own
  int pending = 0;          // visits not ended
  double accuracy_sum = 0;  // of the trails ended
  bool at_door = false;     // waiting for a task's first Ready pod (counted in door_waiting)
  bool in_backlog = false;  // held for its path's pods (counted in cold_backlog) until it ends
};

}  // namespace engine
}  // namespace pipescale::gym
