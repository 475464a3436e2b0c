// One router thread's answer to each HTTP request: the Open Inference Protocol endpoints of
// the pipeline as one model, the walk of its DAG over the model pods (the pure core decides
// where to go, which pod, and when a request can no longer make its deadline), and the
// metrics of every request and call.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/summary.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "asio.h"
#include "batcher.h"
#include "matcher.h"
#include "routing/body.h"
#include "routing/loki.h"
#include "routing/walk.h"
#include "spliced_body.h"
#include "upstream.h"

namespace pipescale::router {

struct Endpoint {
  std::string address;         // ip:port of a Ready pod
  double weight = 1;           // its planned capacity
  std::string variant;         // the model variant it serves ("" when not known)
  std::string hardware_class;  // the class it runs on ("" when not known)
  int batch = 1;               // its batch size
  double batch_ms = 0;         // d(batch) on its class, 0 when not known
  // Requests sent to the pod and not yet answered: shared by every Endpoint of the address, so a
  // new profile (a batch change) does not read a busy pod as idle.
  std::shared_ptr<std::atomic<int>> outstanding = std::make_shared<std::atomic<int>>(0);
};

// A task served by a pool across hardware classes (Kairos's and MArk's pools.json).
struct TaskPool {
  std::shared_ptr<Matcher> matcher;  // Kairos: requests wait for a replica with none in flight
  std::string spill_class;           // MArk: the warm burst class that takes late requests
  double rt_max_ms = 0;              // MArk: the response-time limit a main replica must meet
};

// The pipeline's graph and its pods as one request sees them: replaced whole when either
// changes, so a walk reads one consistent view from its start to its end.
struct RoutingTable {
  Graph graph;
  std::map<std::string, std::vector<std::shared_ptr<Endpoint>>> endpoints;  // by task
  std::shared_ptr<const LokiTables> loki;  // a Loki plan's routing.json, or null
  std::map<std::string, TaskPool> pools;   // by task, from a pools.json
  // Batches the router forms, by task: (variant, its batcher), from a batching.json.
  std::map<std::string, std::vector<std::pair<std::string, std::shared_ptr<Batcher>>>> batchers;

  // The batcher of `task` for `variant` ("": the task's first), with its variant; null when
  // the router forms no batches there.
  std::pair<std::shared_ptr<Batcher>, std::string> BatcherFor(const std::string& task,
                                                              const std::string& variant) const;
  // The first of `tasks` with no Ready pod, or none when each has one.
  std::optional<std::string> TaskWithoutPod(const std::vector<std::string>& tasks) const;
};

// Batch rows past this are no batch size a spec may declare: a call naming more is not recorded,
// so a hostile or broken answer cannot mint series without bound.
inline constexpr int kMaxBatchRows = 4096;

// What the router knows of one call it sent, besides its answer, for the batch-service series.
struct CallFacts {
  std::string hardware_class;  // the pod's class ("" when not known)
  int rows = 0;                // rows sent: the request's, or the whole batch the router formed
  // The pod's server forms batches itself (Endpoint.batch > 1; discovery gives a pod whose
  // batches the router forms 1: it serves each alone).
  bool pod_batches = false;
  bool pod_was_idle = false;  // no other call was outstanding at the pod when it was sent
};

// One batch's service time on a pod of `hardware_class`: d(rows) as measured.
struct BatchSample {
  int rows = 0;
  double seconds = 0;
};

// What an answered call (`seconds` from sent to answered, its answer's `parameters`) says of d(b)
// on its pod's class, or nullopt when it says nothing sure:
//  - rows: the answer's kBatchRowsParameter (a whole number above 0); else, when the pod does
//    not batch, the rows sent; else nothing (a server batch of unknown size names no d(b)).
//    Rows past kMaxBatchRows: nothing (dropped, not clamped, so no series holds another size's
//    times).
//  - service: the call past the queue time the answer reports (kQueueParameter); else, when the
//    pod does not batch and had no other call outstanding (as this router counts: another
//    replica's calls are not seen), the whole call, which cannot have queued; else nothing.
//  - a pod of no known class: nothing (a profile is per class).
// The router's own waits (a batch filling in its batcher, Kairos's queue) come before the call is
// sent, so are never in it. A batch the router formed is one call, measured once; the calls of a
// batch its server formed are each a sample of it (the router cannot tell which calls shared
// it), so there the count is calls, the mean the same.
std::optional<BatchSample> BatchServiceSample(const CallFacts& call, double seconds,
                                              const nlohmann::json& parameters);

// What every thread shares: fixed after start, but for the atomics.
struct RouterConfig {
  std::string pipeline, namespace_name;
  std::atomic<std::shared_ptr<const RoutingTable>> table;  // null until the pipeline is known
  std::chrono::milliseconds grace{50};                     // past the deadline before answering 504
  std::chrono::milliseconds call_timeout{30000};  // a call's limit when no deadline applies
  int max_in_flight = 4096;
  std::atomic<int> in_flight{0};
  // Set at SIGTERM: the router still serves, but says it is not ready and closes each
  // connection after its answer, so clients move to another replica while nothing is lost.
  std::atomic<bool> draining{false};
  DropPolicy drop_policy = DropPolicy::kReroute;  // for requests behind a Loki plan's budgets
  // The baselines the pools' policies are measured against: first come, first served instead
  // of Kairos's matching; no spill to MArk's burst class.
  bool fcfs = false;
  bool spill = true;
  // Requests whose path would be served late at the pods' queues are refused at the door, and
  // ones whose path has a task without a Ready pod wait there (router/admission.h).
  bool admission = true;
  // A request body past this is answered 413 before the rest is read.
  size_t max_body_bytes = model::RouterSpec{}.max_body_bytes;
};

class RouterMetrics {
 public:
  RouterMetrics(prometheus::Registry& registry, const RouterConfig& config);
  void Request(const std::string& path, unsigned code, double seconds);
  // A request for a known path, of `rows` rows (Kairos's query-size mix).
  void QueryRows(int rows) { query_rows_.Observe(rows); }
  void Call(const std::string& task, const std::string& variant, unsigned code, double seconds);
  // A call's time split as the model reported it: waiting for its batch, then served.
  void Split(const std::string& task, const std::string& variant, double queue_seconds,
             double service_seconds);
  prometheus::Gauge& TaskInFlight(const std::string& task);
  void Retry(const std::string& task);
  // Loki's data plane: a request dropped before `task`, and one sent to a backup variant.
  void Drop(const std::string& task, const std::string& reason);
  void Reroute(const std::string& task, const std::string& variant);
  // The pools: a request MArk's bouncer sent to the burst class, and Kairos's queue length.
  void Spill(const std::string& task);
  // A batch the router formed, by its rows.
  void Batch(const std::string& task, int rows);
  // One batch of `rows` rows served in `seconds` on a pod of `hardware_class` (a BatchSample).
  void BatchService(const std::string& task, const std::string& variant,
                    const std::string& hardware_class, int rows, double seconds);
  prometheus::Gauge& PoolWaiting(const std::string& task);
  void Late(const std::string& path);
  // A request refused at the door, by reason (kShedReasons).
  void Shed(const std::string& path, const char* reason);
  // Every path's and task's counters at 0, so a path without requests yet reads as rate 0,
  // not as missing (the operator holds its plan while a series is missing), and a dashboard
  // shows no retries rather than no data.
  void Declare(const Graph& graph);
  prometheus::Gauge& in_flight() { return in_flight_; }

 private:
  inline static const std::string kUnlisted = "unlisted";  // the path of a walk matching none

  std::map<std::string, std::string> Labels(std::map<std::string, std::string> more) const;

  // Hashes a std::string key as the string_view it is looked up by (no copy to find a series).
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // Family::Add builds and hashes a label map and takes a lock at every call; on the request
  // path each thread keeps the series it has used, keyed by this instance, the family and the
  // label values, the key written into one buffer the thread reuses (no allocation once a series
  // is known). Series live as long as their family, which outlives every thread.
  template <typename T, typename Add>
  T& Cached(const prometheus::Family<T>& family, std::initializer_list<std::string_view> values,
            Add add) const {
    thread_local std::unordered_map<std::string, T*, KeyHash, std::equal_to<>> cache;
    thread_local std::string key;
    const void* f = &family;
    key.assign(reinterpret_cast<const char*>(&id_), sizeof id_)
        .append(reinterpret_cast<const char*>(&f), sizeof f);
    for (std::string_view v : values) (key += v) += '\x1f';
    auto it = cache.find(std::string_view(key));
    if (it == cache.end()) it = cache.emplace(key, add()).first;
    return *it->second;
  }

  static std::uint64_t NextId();
  const std::uint64_t id_ = NextId();  // never reused, so no thread finds a dead series
  const RouterConfig& config_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& duration_;
  prometheus::Histogram& query_rows_;
  prometheus::Family<prometheus::Counter>& calls_;
  prometheus::Family<prometheus::Histogram>& call_duration_;
  prometheus::Family<prometheus::Histogram>& queue_;
  prometheus::Family<prometheus::Histogram>& service_;
  prometheus::Family<prometheus::Counter>& retries_;
  prometheus::Family<prometheus::Counter>& drops_;
  prometheus::Family<prometheus::Counter>& reroutes_;
  prometheus::Family<prometheus::Counter>& spills_;
  prometheus::Family<prometheus::Gauge>& pool_waiting_;
  prometheus::Family<prometheus::Histogram>& batch_rows_;
  prometheus::Family<prometheus::Summary>& batch_service_;
  prometheus::Family<prometheus::Counter>& late_;
  prometheus::Family<prometheus::Counter>& shed_;
  prometheus::Family<prometheus::Gauge>& task_in_flight_;
  prometheus::Gauge& in_flight_;
};

class PipelineHandler {
 public:
  PipelineHandler(RouterConfig& config, RouterMetrics& metrics, UpstreamPool& pool,
                  std::uint64_t seed)
      : config_(config),
        metrics_(metrics),
        pool_(pool),
        rng_(seed),
        model_target_("/v2/models/" + config.pipeline),
        infer_target_(model_target_ + "/infer") {}

  asio::awaitable<ClientResponse> Handle(const HttpRequest& request);
  bool draining() const { return config_.draining.load(std::memory_order_relaxed); }

 private:
  struct Walk;
  asio::awaitable<ClientResponse> Infer(const HttpRequest& request);
  // A request for a named path at the door: nothing when it may go in (after waiting for its
  // tasks' first Ready pods within its deadline), else the 503 that refuses it.
  asio::awaitable<std::optional<ClientResponse>> AtDoor(Walk& walk);
  // A task's answer, with what its batch-service sample needs: `facts` is empty for an answer
  // out of the router's batcher, whose batch was measured once where it was sent (SendBatch).
  struct TaskReply {
    CallReply call;
    std::optional<CallFacts> facts;
  };
  // The call before a visit: the variant that served it ("" at the first task), which picks
  // Loki's table for the next.
  struct Previous {
    std::string variant;
  };
  // `rows`: the rows it carries (CallFacts::rows).
  asio::awaitable<Result<TaskReply>> Call(const Walk& walk, const std::string& task,
                                          const std::string& variant, const Body& body, int rows);
  // Call, or through the task's batcher when the router forms its batches.
  asio::awaitable<Result<TaskReply>> Send(const Walk& walk, const std::string& task,
                                          const std::string& variant, const Body& body);
  // The call for a batch the router formed (`rows` rows), its service measured once here: each
  // request of the batch gets its rows of this answer from the batcher.
  asio::awaitable<Result<CallReply>> SendBatch(const Walk& walk, const std::string& task,
                                               const std::string& variant, const Body& batch,
                                               int rows);
  // The batch-service sample of an answered call, if it makes one.
  void MeasureBatch(const std::string& task, const CallReply& call, const CallFacts& facts,
                    const nlohmann::json& parameters);
  // A pod for the call, held until its answer: a matched pool's replica goes back to its
  // matcher when the lease ends.
  struct Lease {
    std::shared_ptr<Endpoint> pod;
    std::shared_ptr<Matcher> matcher;
    Lease(std::shared_ptr<Endpoint> p, std::shared_ptr<Matcher> m)
        : pod(std::move(p)), matcher(std::move(m)) {}
    Lease(Lease&&) = default;  // leaves the moved-from lease empty
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
  };
  // Which pod: the matcher's, else the least loaded (router/picker.h) of the plan's variant's pods
  // (MArk's main or burst class), other than `tried`.
  asio::awaitable<Result<Lease>> Pick(const Walk& walk, const std::string& task,
                                      const std::string& variant, const Endpoint* tried);
  // The table's pods a call may go to (pointers into it: no reference count is touched per
  // call), or none.
  using Pods = std::vector<const std::shared_ptr<Endpoint>*>;
  Pods Candidates(const RoutingTable& table, const std::string& task, const std::string& variant,
                  const Endpoint* tried);
  // The variant of `task` the plan sends this request to ("" for any), or nullopt when Loki's
  // policy drops it here.
  std::optional<std::string> Plan(Walk& walk, const std::string& task, const Previous& previous);
  asio::awaitable<void> Visit(Walk& walk, std::string task, Body body,
                              std::vector<std::string> trail, Previous previous);
  asio::awaitable<void> VisitAll(Walk& walk, std::vector<std::pair<std::string, Body>> calls,
                                 const std::vector<std::string>& trail, const Previous& previous);

  RouterConfig& config_;
  RouterMetrics& metrics_;
  UpstreamPool& pool_;
  std::mt19937_64 rng_;
  // The pipeline as one model's endpoints, fixed for the router's life.
  const std::string model_target_, infer_target_;
};

}  // namespace pipescale::router
