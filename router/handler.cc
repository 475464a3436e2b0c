#include "handler.h"

#include <charconv>
#include <set>

#include "common/strings.h"
#include "guards.h"
#include "routing/admission.h"
#include "routing/binary.h"
#include "routing/picker.h"
#include "routing/pools.h"
#include "routing/request.h"

namespace pipescale::router {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

ClientResponse Reply(unsigned status, const std::string& body) {
  ClientResponse r{static_cast<http::status>(status), 11};
  r.set(http::field::content_type, "application/json");
  r.body().text = body;
  return r;
}

ClientResponse ErrorReply(unsigned status, const std::string& message) {
  return Reply(status, ErrorBody(message));
}

// A whole number (a status code, a batch's rows) as a label value, written without allocating.
class LabelNumber {
 public:
  explicit LabelNumber(unsigned value) {
    size_ = static_cast<size_t>(std::to_chars(text_, text_ + sizeof text_, value).ptr - text_);
  }
  // Read where a label value is: a view of the text, as a std::string would give.
  // NOLINTNEXTLINE(google-explicit-constructor)
  operator std::string_view() const { return {text_, size_}; }

 private:
  char text_[12] = {};
  size_t size_ = 0;
};

// One call per task in `tasks`, each with a copy of `body` but the last, which takes it.
std::vector<std::pair<std::string, Body>> Spread(const std::vector<std::string>& tasks, Body body) {
  std::vector<std::pair<std::string, Body>> calls;
  calls.reserve(tasks.size());
  for (size_t i = 0; i + 1 < tasks.size(); ++i) calls.emplace_back(tasks[i], body);
  if (!tasks.empty()) calls.emplace_back(tasks.back(), std::move(body));
  return calls;
}

// A task's calls take from a millisecond (a small model) to seconds (a large batch).
prometheus::Histogram::BucketBoundaries CallBuckets() {
  return {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};
}

// Rows of a batch the router forms.
prometheus::Histogram::BucketBoundaries BatchBuckets() { return {1, 2, 4, 8, 16, 32, 64, 128}; }

// Counts a request in flight for as long as it lives.
class InFlight {
 public:
  InFlight(RouterConfig& config, RouterMetrics& metrics) : config_(config), metrics_(metrics) {
    ++config_.in_flight;
    metrics_.in_flight().Increment();
  }
  ~InFlight() {
    --config_.in_flight;
    metrics_.in_flight().Decrement();
  }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  InFlight(InFlight&&) = delete;
  InFlight& operator=(InFlight&&) = delete;

 private:
  RouterConfig& config_;
  RouterMetrics& metrics_;
};

// Counts a call outstanding at its pod and in flight at its task for as long as it lives: also
// when what it awaits throws (a guard carries on), a pod must not stay counted busy for good.
class Outstanding {
 public:
  Outstanding(std::atomic<int>& at_pod, prometheus::Gauge& at_task)
      : at_pod_(at_pod), at_task_(at_task), ahead_(at_pod_.fetch_add(1)) {
    at_task_.Increment();
  }
  ~Outstanding() {
    at_task_.Decrement();
    --at_pod_;
  }
  Outstanding(const Outstanding&) = delete;
  Outstanding& operator=(const Outstanding&) = delete;
  Outstanding(Outstanding&&) = delete;
  Outstanding& operator=(Outstanding&&) = delete;
  // Calls outstanding at the pod when this one was sent (the count it found, read and raised
  // at once, so two calls sent together cannot both find the pod idle).
  int ahead() const { return ahead_; }

 private:
  std::atomic<int>& at_pod_;
  prometheus::Gauge& at_task_;
  const int ahead_;
};

}  // namespace

// One request's walk through the DAG, shared by the visits it fans out to (all on one thread).
struct PipelineHandler::Walk {
  std::shared_ptr<const RoutingTable> table;
  std::string path;  // named by the client, or ""
  int rows = 1;      // the query's size (its first input's leading dimension)
  Clock::time_point start, deadline;
  std::vector<std::string> outputs;  // of the tasks it ended at
  // Their binary data (the binary extension) in the order of `outputs`: parts of the answers
  // they came in, held here until the client has them.
  std::vector<std::string> held;
  std::vector<SplicedBody::value_type::Part> parts;
  std::map<std::vector<std::string>, Clock::time_point> trails;  // each ending, and when
  std::optional<std::pair<unsigned, std::string>> failure;       // the first: status, message

  // The request fails with the first failure of any of its visits.
  void Fail(unsigned status, std::string message) {
    if (!failure) failure = {status, std::move(message)};
  }
};

namespace {

// The batch rows an answer reports: 0 when it reports none a batch can have (absent, not a whole
// number, not above 0), so the rows sent may stand; -1 past kMaxBatchRows, never recorded.
int ReportedRows(const json& parameters) {
  const auto rows = parameters.find(kBatchRowsParameter);
  if (rows == parameters.end() || !rows->is_number_integer() || *rows <= 0) return 0;
  return *rows > kMaxBatchRows ? -1 : rows->get<int>();
}

}  // namespace

std::optional<BatchSample> BatchServiceSample(const CallFacts& call, double seconds,
                                              const json& parameters) {
  if (call.hardware_class.empty()) return std::nullopt;  // a profile is per class
  int rows = ReportedRows(parameters);
  if (rows == 0 && !call.pod_batches) rows = call.rows;
  // A server batch of unknown size says nothing about d(b); nor does a batch past any spec's.
  if (rows <= 0 || rows > kMaxBatchRows) return std::nullopt;
  const auto queued = parameters.find(kQueueParameter);
  if (queued != parameters.end() && queued->is_number() && *queued >= 0) {
    const double queue = queued->get<double>() / 1000;
    // The queue lies within the call: one longer is a broken clock, no service time.
    if (queue > seconds) return std::nullopt;
    return BatchSample{rows, seconds - queue};
  }
  // No queue time: only a call that cannot have queued at its server is all service.
  if (call.pod_batches || !call.pod_was_idle) return std::nullopt;
  return BatchSample{rows, seconds};
}

RouterMetrics::RouterMetrics(prometheus::Registry& r, const RouterConfig& config)
    : config_(config),
      requests_(prometheus::BuildCounter()
                    .Name("pipescale_requests_total")
                    .Help("Requests the router answered, by execution path and HTTP status")
                    .Register(r)),
      duration_(prometheus::BuildHistogram()
                    .Name("pipescale_request_duration_seconds")
                    .Help("End-to-end latency of each execution path, as the router saw it")
                    .Register(r)),
      query_rows_(prometheus::BuildHistogram()
                      .Name("pipescale_router_query_rows")
                      .Help("Rows per query (the first input's leading dimension) of every request "
                            "for a known path, answered or not")
                      .Register(r)
                      .Add(Labels({}), QuerySizeBounds())),
      calls_(prometheus::BuildCounter()
                 .Name("pipescale_router_task_requests_total")
                 .Help("Calls to each task's pods, by HTTP status (0: no answer)")
                 .Register(r)),
      call_duration_(prometheus::BuildHistogram()
                         .Name("pipescale_router_task_duration_seconds")
                         .Help("Time a task's pod took to answer (queue plus service)")
                         .Register(r)),
      queue_(prometheus::BuildHistogram()
                 .Name("pipescale_router_task_queue_seconds")
                 .Help("Time a call waited in its pod's queue, as the model server reported it")
                 .Register(r)),
      service_(prometheus::BuildHistogram()
                   .Name("pipescale_router_task_service_seconds")
                   .Help("Time a call took past its pod's queue (batch, transfer, parsing)")
                   .Register(r)),
      retries_(prometheus::BuildCounter()
                   .Name("pipescale_router_retries_total")
                   .Help("Calls sent again to another pod after a failure")
                   .Register(r)),
      drops_(prometheus::BuildCounter()
                 .Name("pipescale_router_drops_total")
                 .Help("Requests dropped before a task, by reason: Loki's budgets, a full "
                       "Kairos queue")
                 .Register(r)),
      reroutes_(prometheus::BuildCounter()
                    .Name("pipescale_router_reroutes_total")
                    .Help("Requests behind their budget sent to a faster backup variant")
                    .Register(r)),
      spills_(prometheus::BuildCounter()
                  .Name("pipescale_router_spills_total")
                  .Help("Requests MArk's bouncer sent to the warm burst class: every main "
                        "replica would have answered past the response-time limit")
                  .Register(r)),
      pool_waiting_(prometheus::BuildGauge()
                        .Name("pipescale_router_pool_waiting_requests")
                        .Help("Requests waiting in a task's Kairos queue for a replica")
                        .Register(r)),
      batch_rows_(prometheus::BuildHistogram()
                      .Name("pipescale_router_batch_rows")
                      .Help("Rows of each batch the router formed (batchSize.formedBy: router)")
                      .Register(r)),
      batch_service_(prometheus::BuildSummary()
                         .Name("pipescale_router_batch_service_seconds")
                         .Help("Service time of one batch of `rows` rows on a pod of the class: "
                               "the call's time past the pod's queue")
                         .Register(r)),
      late_(prometheus::BuildCounter()
                .Name("pipescale_router_deadline_exceeded_total")
                .Help("Requests answered 504: their path's SLO passed before they were served")
                .Register(r)),
      shed_(prometheus::BuildCounter()
                .Name("pipescale_router_shed_total")
                .Help("Requests refused at the door with 503, by reason: late (the pods' queues "
                      "would serve the path past its SLO), no-pod (a task had no Ready pod "
                      "before the deadline)")
                .Register(r)),
      task_in_flight_(prometheus::BuildGauge()
                          .Name("pipescale_router_task_in_flight_requests")
                          .Help("Calls to each task's pods not yet answered")
                          .Register(r)),
      in_flight_(prometheus::BuildGauge()
                     .Name("pipescale_router_in_flight_requests")
                     .Help("Requests the router is serving now")
                     .Register(r)
                     .Add(Labels({}))) {}

std::map<std::string, std::string> RouterMetrics::Labels(
    std::map<std::string, std::string> more) const {
  more["namespace"] = config_.namespace_name;
  more["pipeline"] = config_.pipeline;
  return more;
}

std::uint64_t RouterMetrics::NextId() {
  static std::atomic<std::uint64_t> instances{0};
  return ++instances;
}

void RouterMetrics::Request(const std::string& path, unsigned code, double seconds) {
  const std::string& p = path.empty() ? kUnlisted : path;
  const LabelNumber c(code);
  Cached(requests_, {p, c}, [&] {
    return &requests_.Add(Labels({{"path", p}, {"code", std::string(c)}}));
  }).Increment();
  if (code != 200) return;
  Cached(duration_, {p}, [&] {
    return &duration_.Add(Labels({{"path", p}}),
                          prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1,
                                                                  0.25, 0.5, 1, 2.5, 5, 10});
  }).Observe(seconds);
}

void RouterMetrics::Call(const std::string& task, const std::string& variant, unsigned code,
                         double seconds) {
  const LabelNumber c(code);
  Cached(calls_, {task, variant, c}, [&] {
    return &calls_.Add(Labels({{"task", task}, {"variant", variant}, {"code", std::string(c)}}));
  }).Increment();
  if (code != 200) return;
  Cached(call_duration_, {task, variant}, [&] {
    return &call_duration_.Add(Labels({{"task", task}, {"variant", variant}}), CallBuckets());
  }).Observe(seconds);
}

void RouterMetrics::Split(const std::string& task, const std::string& variant, double queue_seconds,
                          double service_seconds) {
  const auto add = [&](prometheus::Family<prometheus::Histogram>& family) {
    return &family.Add(Labels({{"task", task}, {"variant", variant}}), CallBuckets());
  };
  Cached(queue_, {task, variant}, [&] { return add(queue_); }).Observe(queue_seconds);
  Cached(service_, {task, variant}, [&] { return add(service_); }).Observe(service_seconds);
}

prometheus::Gauge& RouterMetrics::TaskInFlight(const std::string& task) {
  return Cached(task_in_flight_, {task}, [&] {
    return &task_in_flight_.Add(Labels({{"task", task}}));
  });
}

void RouterMetrics::Declare(const Graph& graph) {
  for (const std::string& path : graph.paths()) {
    requests_.Add(Labels({{"path", path}, {"code", "200"}}));
    late_.Add(Labels({{"path", path}}));
    for (const char* reason : kShedReasons) shed_.Add(Labels({{"path", path}, {"reason", reason}}));
  }
  for (const std::string& task : graph.tasks()) {
    retries_.Add(Labels({{"task", task}}));
    task_in_flight_.Add(Labels({{"task", task}}));
    for (const char* reason : kDropReasons) {
      drops_.Add(Labels({{"task", task}, {"reason", reason}}));
    }
    drops_.Add(Labels({{"task", task}, {"reason", kPoolFull}}));
    spills_.Add(Labels({{"task", task}}));
    pool_waiting_.Add(Labels({{"task", task}}));
    batch_rows_.Add(Labels({{"task", task}}), BatchBuckets());
    for (const std::string& v : graph.variants(task)) {
      reroutes_.Add(Labels({{"task", task}, {"variant", v}}));
    }
  }
}

void RouterMetrics::Retry(const std::string& task) {
  Cached(retries_, {task}, [&] { return &retries_.Add(Labels({{"task", task}})); }).Increment();
}

void RouterMetrics::Drop(const std::string& task, const std::string& reason) {
  Cached(drops_, {task, reason}, [&] {
    return &drops_.Add(Labels({{"task", task}, {"reason", reason}}));
  }).Increment();
}

void RouterMetrics::Reroute(const std::string& task, const std::string& variant) {
  Cached(reroutes_, {task, variant}, [&] {
    return &reroutes_.Add(Labels({{"task", task}, {"variant", variant}}));
  }).Increment();
}

void RouterMetrics::Spill(const std::string& task) {
  Cached(spills_, {task}, [&] { return &spills_.Add(Labels({{"task", task}})); }).Increment();
}

prometheus::Gauge& RouterMetrics::PoolWaiting(const std::string& task) {
  return Cached(pool_waiting_, {task}, [&] {
    return &pool_waiting_.Add(Labels({{"task", task}}));
  });
}

void RouterMetrics::Batch(const std::string& task, int rows) {
  Cached(batch_rows_, {task}, [&] {
    return &batch_rows_.Add(Labels({{"task", task}}), BatchBuckets());
  }).Observe(rows);
}

void RouterMetrics::BatchService(const std::string& task, const std::string& variant,
                                 const std::string& hardware_class, int rows, double seconds) {
  const LabelNumber r(static_cast<unsigned>(rows));
  // No quantiles: _sum and _count, whose ratio over a window is the mean d(rows) the operator
  // learns; quantiles would cost a sliding window per series and sum across nothing.
  Cached(batch_service_, {task, variant, hardware_class, r}, [&] {
    return &batch_service_.Add(Labels({{"task", task},
                                       {"variant", variant},
                                       {"hardware_class", hardware_class},
                                       {"rows", std::string(r)}}),
                               prometheus::Summary::Quantiles{});
  }).Observe(seconds);
}

// Refusals and late answers come fastest when the router is overloaded: cached like the rest.
void RouterMetrics::Shed(const std::string& path, const char* reason) {
  Cached(shed_, {path, reason}, [&] {
    return &shed_.Add(Labels({{"path", path}, {"reason", reason}}));
  }).Increment();
}

void RouterMetrics::Late(const std::string& path) {
  const std::string& p = path.empty() ? kUnlisted : path;
  Cached(late_, {p}, [&] { return &late_.Add(Labels({{"path", p}})); }).Increment();
}

asio::awaitable<ClientResponse> PipelineHandler::Handle(const HttpRequest& request) {
  const std::string_view target(request.target().data(), request.target().size());
  const std::string& model = model_target_;
  if (request.method() == http::verb::post &&
      (target == infer_target_ ||
       (target.starts_with(model) && target.substr(model.size()).starts_with("/versions/")))) {
    co_return co_await Infer(request);
  }
  if (request.method() != http::verb::get) co_return ErrorReply(405, "method not allowed");
  if (target == "/v2/health/live") co_return Reply(200, "");
  // The server is ready once the pipeline is known, even while a task has no pod: a request the
  // router answers 503 is still demand the operator must see to scale that task up from zero.
  // The pipeline's model is ready when it can serve, every task with a Ready pod: what a client
  // waits for before it sends (the protocol's model readiness).
  const bool server = target == "/v2/health/ready";
  if (server || target == model + "/ready") {
    const std::shared_ptr<const RoutingTable> table = config_.table.load();
    if (!table) co_return ErrorReply(400, "the pipeline is not known yet");
    if (config_.draining.load()) co_return ErrorReply(503, "the router is shutting down");
    if (server) co_return Reply(200, "");
    if (const auto waiting = table->TaskWithoutPod(table->graph.tasks())) {
      co_return ErrorReply(503, "task " + *waiting + " has no Ready pod yet");
    }
    co_return Reply(200, "");
  }
  if (target == model) {
    co_return Reply(200, json{{"name", config_.pipeline},
                              {"versions", {"1"}},
                              {"platform", "pipescale"},
                              {"inputs", json::array()},
                              {"outputs", json::array()}}
                             .dump());
  }
  if (target == "/v2") co_return Reply(200, json{{"name", "pipescale-router"}}.dump());
  co_return ErrorReply(404, "no such endpoint; the pipeline is model " + config_.pipeline);
}

PipelineHandler::Lease::~Lease() {
  if (matcher && pod) matcher->Release(*pod);
}

PipelineHandler::Pods PipelineHandler::Candidates(const RoutingTable& table,
                                                  const std::string& task,
                                                  const std::string& variant,
                                                  const Endpoint* tried) {
  Pods all, chosen;
  for (const auto& p : table.endpoints.at(task)) {
    if (p.get() != tried) all.push_back(&p);
  }
  // The plan's variant when it has a Ready pod; else any pod of the task serves.
  if (!variant.empty()) {
    std::copy_if(all.begin(), all.end(), std::back_inserter(chosen),
                 [&](const auto* p) { return (*p)->variant == variant; });
  }
  if (!chosen.empty()) all = std::move(chosen);
  const auto pool = table.pools.find(task);
  if (pool == table.pools.end() || pool->second.spill_class.empty()) return all;
  // MArk: the main classes, unless every main replica would answer late and the burst class
  // has a replica.
  Pods main, burst;
  std::vector<MainReplica> load;
  for (const auto* p : all) {
    const Endpoint& e = **p;
    if (e.hardware_class == pool->second.spill_class) {
      burst.push_back(p);
    } else {
      main.push_back(p);
      load.push_back({e.outstanding->load(), e.batch, e.batch_ms});
    }
  }
  if (!config_.spill) return main;  // the baseline: the burst class takes nothing
  if (!burst.empty() && ShouldSpill(load, pool->second.rt_max_ms)) {
    metrics_.Spill(task);
    return burst;
  }
  return main.empty() ? burst : main;
}

asio::awaitable<Result<PipelineHandler::Lease>> PipelineHandler::Pick(const Walk& walk,
                                                                      const std::string& task,
                                                                      const std::string& variant,
                                                                      const Endpoint* tried) {
  const RoutingTable& table = *walk.table;
  auto it = table.endpoints.find(task);
  if (it == table.endpoints.end() || it->second.empty()) {
    co_return Error{ErrorKind::kNotFound, "task " + task + " has no ready pod"};
  }
  const auto pool = table.pools.find(task);
  if (pool != table.pools.end() && pool->second.matcher) {
    const std::shared_ptr<Matcher> matcher = pool->second.matcher;
    auto replica = co_await matcher->Acquire(pool_.executor(), walk.rows, walk.deadline);
    metrics_.PoolWaiting(task).Set(static_cast<double>(matcher->waiting()));
    if (!replica) {
      if (replica.error().kind == ErrorKind::kUnavailable) metrics_.Drop(task, kPoolFull);
      co_return Error{replica.error().kind, "task " + task + ": " + replica.error().message};
    }
    co_return Lease(std::move(*replica), matcher);
  }
  const auto pods = Candidates(table, task, variant, tried);
  std::vector<Candidate> candidates;
  candidates.reserve(pods.size());
  for (const auto* p : pods) {
    candidates.push_back({(*p)->weight, (*p)->outstanding->load(), (*p)->batch});
  }
  std::uniform_real_distribution<double> u(0, 1);
  const int pick = PickPod(candidates, u(rng_), u(rng_));
  if (pick < 0) co_return Error{ErrorKind::kNotFound, "task " + task + " has no other pod"};
  co_return Lease(*pods[pick], nullptr);
}

asio::awaitable<Result<PipelineHandler::TaskReply>> PipelineHandler::Call(
    const Walk& walk, const std::string& task, const std::string& variant, const Body& body,
    int rows) {
  // A model that branches takes the client's path instead when told which it is.
  std::vector<std::pair<std::string_view, std::string>> parameters = {{kDeadlineParameter, ""}};
  if (!walk.path.empty()) parameters.emplace_back(kPathParameter, Quoted(walk.path));
  std::string last_error;
  bool overloaded = false;
  std::shared_ptr<Endpoint> tried;
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto lease = co_await Pick(walk, task, variant, tried.get());
    if (!lease) {
      if (attempt == 0) co_return lease.error();
      break;  // no other pod to try
    }
    if (attempt == 1) metrics_.Retry(task);
    const auto remaining =
        std::chrono::duration_cast<std::chrono::milliseconds>(walk.deadline - Clock::now());
    if (remaining.count() <= 0) {
      co_return Error{ErrorKind::kExpired, "the deadline passed before task " + task};
    }
    parameters[0].second = std::to_string(remaining.count());
    Endpoint& pod = *lease->pod;
    // The clock starts here, as the call leaves: whatever waited in the router before (a batch
    // filling, Kairos's queue) is not the pod's time.
    const auto start = Clock::now();
    Result<UpstreamReply> reply = Error{ErrorKind::kTransient, "not sent"};
    int ahead = 0;
    {
      const Outstanding busy(*pod.outstanding, metrics_.TaskInFlight(task));
      ahead = busy.ahead();
      const Wire wire = body.Render(parameters);
      const auto pieces = wire.Pieces();
      const auto header_length =
          wire.binary.empty() ? std::nullopt : std::optional<size_t>(wire.JsonBytes());
      reply = co_await pool_.Post(pod.address, "/v2/models/" + task + "/infer", pieces,
                                  header_length, remaining + config_.grace);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    metrics_.Call(task, pod.variant, reply.ok() ? reply->status : 0, seconds);
    if (reply.ok() && reply->status == 200) {
      co_return TaskReply{.call = {.body = std::move(reply->body),
                                   .header_length = std::move(reply->header_length),
                                   .variant = pod.variant,
                                   .seconds = seconds},
                          .facts = CallFacts{.hardware_class = pod.hardware_class,
                                             .rows = rows,
                                             .pod_batches = pod.batch > 1,
                                             .pod_was_idle = ahead == 0}};
    }
    if (reply.ok() && reply->status < 500) {
      co_return Error{ErrorKind::kInvalid, "task " + task + " refused the request (" +
                                               std::to_string(reply->status) + "): " + reply->body};
    }
    if (Clock::now() >= walk.deadline) {
      co_return Error{ErrorKind::kExpired, "the deadline passed while task " + task + " served"};
    }
    last_error = reply.ok() ? "HTTP " + std::to_string(reply->status) + ": " + reply->body
                            : reply.error().message;
    // A model that answered 503 is overloaded or not ready: it did not fail, and the client is
    // told so (503) if no other pod serves. Anything else from a model is its failure (502).
    overloaded = reply.ok() && reply->status == 503;
    tried = lease->pod;  // once more, on another pod: a failed pod must not fail it alone
  }
  if (overloaded) co_return Error{ErrorKind::kUnavailable, "task " + task + ": " + last_error};
  co_return Error{ErrorKind::kTransient, "task " + task + " failed: " + last_error};
}

std::pair<std::shared_ptr<Batcher>, std::string> RoutingTable::BatcherFor(
    const std::string& task, const std::string& variant) const {
  const auto it = batchers.find(task);
  if (it == batchers.end()) return {nullptr, variant};
  for (const auto& [v, batcher] : it->second) {
    if (variant.empty() || v == variant) return {batcher, v};
  }
  return {nullptr, variant};
}

std::optional<std::string> RoutingTable::TaskWithoutPod(
    const std::vector<std::string>& tasks) const {
  for (const std::string& task : tasks) {
    const auto pods = endpoints.find(task);
    if (pods == endpoints.end() || pods->second.empty()) return task;
  }
  return std::nullopt;
}

asio::awaitable<Result<PipelineHandler::TaskReply>> PipelineHandler::Send(
    const Walk& walk, const std::string& task, const std::string& variant, const Body& body) {
  const auto found = walk.table->BatcherFor(task, variant);
  const std::shared_ptr<Batcher>& batcher = found.first;
  const std::string& batch_variant = found.second;
  if (!batcher) co_return co_await Call(walk, task, variant, body, walk.rows);
  const Batcher::Send send = [&](const Body& batch, int rows) {
    metrics_.Batch(task, rows);
    // A request the batcher cannot stack goes alone as the client sent it (the batcher counts it
    // 1 row): its rows are the request's.
    return SendBatch(walk, task, batch_variant, batch, &batch == &body ? walk.rows : rows);
  };
  auto reply = co_await batcher->Submit(body, walk.deadline, send);
  if (!reply) co_return reply.error();
  co_return TaskReply{.call = std::move(*reply)};  // its batch was measured where it was sent
}

asio::awaitable<Result<CallReply>> PipelineHandler::SendBatch(const Walk& walk,
                                                              const std::string& task,
                                                              const std::string& variant,
                                                              const Body& batch, int rows) {
  auto reply = co_await Call(walk, task, variant, batch, rows);
  if (!reply) co_return reply.error();
  // Once per batch, not per request in it: the count is batches served.
  if (const auto answer = ReadAnswer(reply->call.body, reply->call.header_length)) {
    MeasureBatch(task, reply->call, *reply->facts, answer->parameters);
  }
  co_return std::move(*reply).call;
}

void PipelineHandler::MeasureBatch(const std::string& task, const CallReply& call,
                                   const CallFacts& facts, const json& parameters) {
  if (const auto sample = BatchServiceSample(facts, call.seconds, parameters)) {
    metrics_.BatchService(task, call.variant, facts.hardware_class, sample->rows, sample->seconds);
  }
}

asio::awaitable<void> PipelineHandler::VisitAll(Walk& walk,
                                                std::vector<std::pair<std::string, Body>> calls,
                                                const std::vector<std::string>& trail,
                                                const Previous& previous) {
  if (calls.size() == 1) {
    co_await Visit(walk, calls[0].first, std::move(calls[0].second), trail, previous);
    co_return;
  }
  // Fan-out: every call at once, this coroutine resuming when the last ends.
  std::vector<asio::awaitable<void>> branches;
  branches.reserve(calls.size());
  for (auto& [task, body] : calls) {
    branches.push_back(Visit(walk, task, std::move(body), trail, previous));
  }
  // A branch that threw (a bug, logged by FanOut) fails the walk: never 200 with an output
  // missing.
  if (!(co_await FanOut(pool_.executor(), branches, "router-request")).empty()) {
    walk.Fail(500, "a branch of the walk failed; the router's log says why");
  }
}

namespace {

// What a request of `rows` rows entering `task` now would find there: the loads of its pods (of
// `variant` only, unless "") and, where the router forms the batches, their wait budget; where
// Kairos's matcher serves the task, the matcher's prediction for the query.
TaskNow TaskNowAt(const RoutingTable& table, const std::string& task, const std::string& variant,
                  int rows) {
  if (const auto pool = table.pools.find(task); pool != table.pools.end() && pool->second.matcher) {
    if (const std::optional<double> ms = pool->second.matcher->PredictMs(rows)) {
      return MatchedTaskNow(*ms);
    }
  }
  TaskNow now;
  const auto pods = table.endpoints.find(task);
  if (pods != table.endpoints.end()) {
    for (const auto& p : pods->second) {
      if (variant.empty() || p->variant == variant) {
        now.pods.push_back({p->outstanding->load(), p->batch, p->batch_ms});
      }
    }
  }
  if (const auto batcher = table.BatcherFor(task, variant).first) {
    now.fill_ms = batcher->config().second;
  }
  return now;
}

// TaskNowAt each of `tasks`, from the `from`th on, on any variant.
std::vector<TaskNow> TasksNow(const RoutingTable& table, const std::vector<std::string>& tasks,
                              int rows, size_t from = 0) {
  std::vector<TaskNow> out;
  for (size_t i = from; i < tasks.size(); ++i) out.push_back(TaskNowAt(table, tasks[i], "", rows));
  return out;
}

// Loki's choices at `task` of `path` as a request would find them now: each variant the plan
// runs there, most accurate first, with the time predicted for it and the tasks after it.
std::vector<Option> LokiOptionsAt(const RoutingTable& table, const LokiTables& loki,
                                  const std::string& path, const std::string& task, int rows) {
  double downstream = 0;
  if (!path.empty()) {
    const std::vector<std::string>& tasks = table.graph.PathTasks(path);
    const auto here = std::find(tasks.begin(), tasks.end(), task);
    if (here != tasks.end()) {
      downstream = PredictedMs(TasksNow(table, tasks, rows, here - tasks.begin() + 1));
    }
  }
  std::vector<Option> out;
  for (const std::string& variant : loki.Variants(task)) {
    const TaskNow now = TaskNowAt(table, task, variant, rows);
    out.push_back({variant, PredictedMs(std::span(&now, 1)) + downstream});
  }
  return out;
}

ClientResponse Refusal(const std::string& message) {
  ClientResponse refused = ErrorReply(503, message);
  refused.set(http::field::retry_after, "1");
  return refused;
}

}  // namespace

std::optional<std::string> PipelineHandler::Plan(Walk& walk, const std::string& task,
                                                 const Previous& previous) {
  if (!walk.table->loki) return "";
  const LokiTables& loki = *walk.table->loki;
  std::uniform_real_distribution<double> u(0, 1);
  const std::string planned = loki.Route(walk.path, task, previous.variant, u(rng_));
  if (planned.empty() || config_.drop_policy == DropPolicy::kNone) return planned;
  const double remaining =
      std::chrono::duration<double, std::milli>(walk.deadline - Clock::now()).count();
  const std::vector<Option> options = LokiOptionsAt(*walk.table, loki, walk.path, task, walk.rows);
  const Verdict verdict = Decide(config_.drop_policy, planned, options, remaining,
                                 walk.table->graph.IsLast(walk.path, task));
  switch (verdict.kind) {
    case Verdict::Kind::kGo:
      return planned;
    case Verdict::Kind::kReroute:
      metrics_.Reroute(task, verdict.variant);
      return verdict.variant;
    case Verdict::Kind::kDrop:
      metrics_.Drop(task, verdict.reason);
      walk.Fail(504, "dropped before task " + task + ": " + verdict.reason);
      return std::nullopt;
  }
  return planned;
}

asio::awaitable<void> PipelineHandler::Visit(Walk& walk, std::string task, Body body,
                                             std::vector<std::string> trail, Previous previous) {
  trail.push_back(task);
  const std::optional<std::string> variant = Plan(walk, task, previous);
  if (!variant) co_return;
  auto reply = co_await Send(walk, task, *variant, body);
  if (!reply) {
    const ErrorKind kind = reply.error().kind;
    const unsigned status = kind == ErrorKind::kExpired                                       ? 504
                            : kind == ErrorKind::kNotFound || kind == ErrorKind::kUnavailable ? 503
                                                                                              : 502;
    walk.Fail(status, reply.error().message);
    co_return;
  }
  // Read in place: `answer` points into the reply, which lives until this visit ends.
  CallReply& call = reply->call;
  auto answer = ReadAnswer(call.body, call.header_length);
  if (answer) {
    const auto queued = answer->parameters.find(kQueueParameter);
    if (queued != answer->parameters.end() && queued->is_number() && *queued >= 0) {
      const double queue = std::min(call.seconds, queued->get<double>() / 1000);
      metrics_.Split(task, call.variant, queue, call.seconds - queue);
    }
    // A call of its own (not a router-formed batch's, measured once as it was sent).
    if (reply->facts) MeasureBatch(task, call, *reply->facts, answer->parameters);
  }
  auto next = answer ? walk.table->graph.Next(walk.path, task, answer->parameters)
                     : Result<std::vector<router::Call>>(answer.error());
  if (!next) {
    walk.Fail(502, "task " + task + ": " + next.error().message);
    co_return;
  }
  if (next->empty()) {
    auto named = NamedOutputs(task, answer->outputs);
    if (!named) {
      walk.Fail(502, "task " + task + ": " + named.error().message);
      co_return;
    }
    for (std::string& o : *named) walk.outputs.push_back(std::move(o));
    walk.trails[trail] = Clock::now();
    // The outputs' binary data goes to the client in the answer it came in, which the walk keeps.
    if (!answer->binary.empty()) {
      walk.parts.push_back({.held = walk.held.size(),
                            .offset = static_cast<size_t>(answer->binary.data() - call.body.data()),
                            .size = answer->binary.size()});
      walk.held.push_back(std::move(call.body));
    }
    co_return;
  }
  std::vector<std::string> tasks;
  for (const router::Call& c : *next) tasks.insert(tasks.end(), c.count, c.task);
  auto calls = Spread(tasks, NextBody(*answer, body));
  // Coroutines get named values only: GCC 12 destroys a prvalue argument of a coroutine twice
  // (AddressSanitizer caught it), and a temporary may end at the suspension.
  const Previous here{call.variant};
  co_await VisitAll(walk, std::move(calls), trail, here);
}

asio::awaitable<std::optional<ClientResponse>> PipelineHandler::AtDoor(Walk& walk) {
  if (!config_.admission || walk.path.empty()) co_return std::nullopt;
  // Pods appear in a new table: a request waiting for them reads each in turn.
  constexpr auto kPoll = std::chrono::milliseconds(20);
  asio::steady_timer timer(pool_.executor());
  while (true) {
    const std::vector<std::string>& tasks = walk.table->graph.PathTasks(walk.path);
    const std::vector<TaskNow> now = TasksNow(*walk.table, tasks, walk.rows);
    const double remaining =
        std::chrono::duration<double, std::milli>(walk.deadline - Clock::now()).count();
    const double share = AdmitShare(walk.table->graph.PriorityOf(walk.path));
    switch (AtTheDoor(now, remaining * share)) {
      case Door::kAdmit:
        co_return std::nullopt;
      case Door::kRefuse:
        metrics_.Shed(walk.path, kShedLate);
        co_return Refusal(StrFormat(
            "path %s is full: its pods would answer in %.0f ms, more than %.0f%% of the %.0f ms "
            "left",
            walk.path.c_str(), PredictedMs(now), 100 * share, remaining));
      case Door::kWaitForPods:
        break;
    }
    if (remaining <= kPoll.count()) {
      const std::string waiting = walk.table->TaskWithoutPod(tasks).value_or(tasks.back());
      metrics_.Shed(walk.path, kShedNoPod);
      co_return Refusal("task " + waiting + " had no ready pod before the deadline");
    }
    timer.expires_after(kPoll);
    beast::error_code ec;
    co_await timer.async_wait(Redirect(ec));
    walk.table = config_.table.load();
  }
}

asio::awaitable<ClientResponse> PipelineHandler::Infer(const HttpRequest& request) {
  const auto start = Clock::now();
  if (config_.in_flight.load() >= config_.max_in_flight) {
    ClientResponse busy =
        ErrorReply(503, "the router is at its limit of " + std::to_string(config_.max_in_flight) +
                            " requests in flight");
    busy.set(http::field::retry_after, "1");
    metrics_.Request("", 503, 0);
    co_return busy;
  }
  const InFlight counted(config_, metrics_);

  const auto header = [&request](std::string_view name) {
    const auto value = request[beast::string_view(name.data(), name.size())];
    return std::string_view(value.data(), value.size());
  };
  auto parsed = ParseInferRequest(
      request.body(), {.path = header(kPathHeader), .header_length = header(kHeaderLengthField)});
  if (!parsed) {
    metrics_.Request("", 400, 0);
    co_return ErrorReply(400, parsed.error().message);
  }
  Walk walk;
  walk.table = config_.table.load();
  if (!walk.table) {
    metrics_.Request("", 503, 0);
    ClientResponse unknown = ErrorReply(503, "the router has not read its pipeline yet");
    unknown.set(http::field::retry_after, "1");
    co_return unknown;
  }
  const Graph& graph = walk.table->graph;
  auto entry = graph.Entry(parsed->path);
  if (!entry) {
    metrics_.Request("", 404, 0);
    co_return ErrorReply(404, entry.error().message);
  }
  // What the clients send, answered or not, once per request: a mix of the answered alone
  // would hide the queries an overloaded pool drops, the very ones a re-plan is for.
  metrics_.QueryRows(parsed->query_size);
  walk.path = parsed->path;
  walk.rows = parsed->query_size;
  walk.start = start;
  const double deadline_ms = graph.DeadlineMs(parsed->path);
  walk.deadline =
      start + (deadline_ms > 0 ? std::chrono::milliseconds(static_cast<long>(deadline_ms))
                               : config_.call_timeout);
  if (auto refused = co_await AtDoor(walk)) {
    metrics_.Request(walk.path, 503, 0);
    co_return std::move(*refused);
  }
  auto calls = Spread(*entry, std::move((*parsed).body));
  const std::vector<std::string> start_trail;
  const Previous entering;
  co_await VisitAll(walk, std::move(calls), start_trail, entering);

  // Never served past the deadline plus the grace: the client is told, and it is counted.
  if (Clock::now() > walk.deadline + config_.grace) {
    walk.Fail(504, "served after the deadline of " + std::to_string(deadline_ms) + " ms");
  }
  const unsigned status = walk.failure ? walk.failure->first : 200;
  if (status == 504) metrics_.Late(walk.path);
  std::set<std::string> paths;
  for (const auto& [trail, done] : walk.trails) {
    const std::string path = walk.path.empty() ? graph.PathOf(trail) : walk.path;
    paths.insert(path);
    metrics_.Request(path, status, std::chrono::duration<double>(done - start).count());
  }
  if (walk.trails.empty()) metrics_.Request(walk.path, status, 0);
  if (walk.failure) co_return ErrorReply(walk.failure->first, walk.failure->second);
  std::string body = R"({"model_name":)" + Quoted(config_.pipeline) + R"(,"outputs":[)";
  for (size_t i = 0; i < walk.outputs.size(); ++i) (body += i > 0 ? "," : "") += walk.outputs[i];
  body += R"(],"parameters":{"pipescale_paths":)" + json(paths).dump() + '}';
  if (!parsed->id.empty()) body += R"(,"id":)" + Quoted(parsed->id);
  ClientResponse answer = Reply(200, body + '}');
  if (!walk.parts.empty()) {
    answer.set(http::field::content_type, "application/octet-stream");
    answer.set(beast::string_view(kHeaderLengthField.data(), kHeaderLengthField.size()),
               std::to_string(answer.body().text.size()));
    answer.body().held = std::move(walk.held);
    answer.body().parts = std::move(walk.parts);
  }
  co_return answer;
}

}  // namespace pipescale::router
