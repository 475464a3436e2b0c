#include "handler.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "clock.h"
#include "counters.h"
#include "guards.h"
#include "prober.h"
#include "reply.h"
#include "routing/binary.h"
#include "routing/request.h"

namespace pipescale::router {
namespace {

using nlohmann::json;

// A gauge counted up for as long as it lives, however the scope ends (a client that hangs up
// ends the coroutine).
class Counted {
 public:
  explicit Counted(prometheus::Gauge& gauge) : gauge_(gauge) { gauge_.Increment(); }
  ~Counted() { gauge_.Decrement(); }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;

 private:
  prometheus::Gauge& gauge_;
};

// One call per task in `tasks`, each with a copy of `body` but the last, which takes it.
std::vector<std::pair<int, routing::Body>> CallsOf(const std::vector<int>& tasks,
                                                   routing::Body body) {
  std::vector<std::pair<int, routing::Body>> calls;
  calls.reserve(tasks.size());
  for (size_t i = 0; i + 1 < tasks.size(); ++i) calls.emplace_back(tasks[i], body);
  if (!tasks.empty()) calls.emplace_back(tasks.back(), std::move(body));
  return calls;
}

// The calls a task's answer makes: as many to each next task as the answer names.
std::vector<std::pair<int, routing::Body>> CallsOf(const std::vector<routing::Call>& next,
                                                   routing::Body body) {
  std::vector<int> tasks;
  for (const routing::Call& c : next) tasks.insert(tasks.end(), c.count, c.task);
  return CallsOf(tasks, std::move(body));
}

}  // namespace

// One request's walk through the DAG, shared by the visits it fans out to (all on one thread):
// the core's state, the table and walker it is judged by, and what the client gets back.
struct PipelineHandler::Walk {
  std::shared_ptr<const RoutingTable> table;
  std::optional<routing::Walker> walker;  // over `table`; rebuilt with it
  routing::Walk state;
  std::vector<std::string> outputs;  // of the tasks it ended at
  // Their binary data (the binary extension) in the order of `outputs`: parts of the answers
  // they came in, held here until the client has them.
  std::vector<std::string> held;
  std::vector<SplicedBody::value_type::Part> parts;
  // Counted among its path's cold requests from when it is held for their pods until answered.
  std::optional<Counted> cold;

  void Use(std::shared_ptr<const RoutingTable> t, const routing::Policy& policy) {
    table = std::move(t);
    walker.emplace(table->graph, table->loki.get(), policy);
  }
  const std::string& PathName() const { return table->graph.PathName(state.path); }
  Clock::time_point Deadline() const {
    return Clock::time_point(std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double, std::milli>(state.deadline_ms)));
  }
};

double PipelineHandler::NowMs() { return SteadyNowMs(); }

asio::awaitable<ClientResponse> PipelineHandler::Handle(const HttpRequest& request) {
  const std::string_view target(request.target().data(), request.target().size());
  const std::string& model = model_target_;
  if (request.method() == http::verb::post &&
      (target == infer_target_ ||
       (target.starts_with(model) && target.substr(model.size()).starts_with("/versions/")))) {
    co_return co_await Infer(request);
  }
  if (request.method() != http::verb::get) co_return ErrorReply(405, "method not allowed");
  co_return Describe(target);
}

ClientResponse PipelineHandler::Describe(std::string_view target) const {
  const std::string& model = model_target_;
  if (target == "/v2/health/live") return Reply(200, "");
  // The server is ready once the pipeline is known, even while a task has no pod: a request the
  // router answers 503 is still demand the operator must see to scale that task up from zero.
  // The pipeline's model is ready when it can serve, every task with a Ready pod: what a client
  // waits for before it sends (the protocol's model readiness).
  const bool server = target == "/v2/health/ready";
  if (server || target == model + "/ready") {
    const std::shared_ptr<const RoutingTable> table = config_.table.load();
    if (!table) return ErrorReply(400, "the pipeline is not known yet");
    if (config_.draining.load()) return ErrorReply(503, "the router is shutting down");
    if (server) return Reply(200, "");
    if (const auto waiting = table->TaskWithoutPod()) {
      return ErrorReply(503, "task " + table->graph.TaskName(*waiting) + " has no Ready pod yet");
    }
    return Reply(200, "");
  }
  if (target == model) {
    return Reply(200, json{{"name", config_.pipeline},
                           {"versions", {"1"}},
                           {"platform", "pipescale"},
                           {"inputs", json::array()},
                           {"outputs", json::array()}}
                          .dump());
  }
  if (target == "/v2") return Reply(200, json{{"name", "pipescale-router"}}.dump());
  return ErrorReply(404, "no such endpoint; the pipeline is model " + config_.pipeline);
}

PipelineHandler::Lease::~Lease() {
  if (matcher && pod) matcher->Release(*pod);
}

asio::awaitable<Result<PipelineHandler::Lease>> PipelineHandler::Pick(const Walk& walk,
                                                                      const RoutingTable& table,
                                                                      int task, int variant,
                                                                      int tried) {
  if (table.pods[task].empty()) co_return walk.walker->NoPod(task);
  const std::string& name = table.graph.TaskName(task);
  if (const std::shared_ptr<Matcher> matcher = table.pools[task].matcher) {
    auto replica = co_await matcher->Acquire(pool_.executor(), walk.state.rows, walk.Deadline());
    metrics_.PoolWaiting(name).Set(static_cast<double>(matcher->waiting()));
    if (!replica) {
      if (replica.error().kind == ErrorKind::kUnavailable) metrics_.Drop(name, routing::kPoolFull);
      co_return Error{replica.error().kind, "task " + name + ": " + replica.error().message};
    }
    co_return Lease(std::move(*replica), -1, matcher);
  }
  // Scratch kept by the thread: a pick allocates nothing once warm.
  thread_local routing::PodPick pick;
  std::uniform_real_distribution<double> u(0, 1);
  walk.walker->PickPod(table, task, variant, tried, u(rng_), pick);
  if (pick.spilled) metrics_.Spill(name);
  if (pick.pod < 0) co_return Error{ErrorKind::kNotFound, "task " + name + " has no other pod"};
  co_return Lease(table.pods[task][pick.pod], pick.pod, nullptr);
}

asio::awaitable<Result<PipelineHandler::TaskReply>> PipelineHandler::Call(const Walk& walk,
                                                                          const RoutingTable& table,
                                                                          int task, int variant,
                                                                          const routing::Body& body,
                                                                          int rows) {
  const std::string& name = table.graph.TaskName(task);
  // A model that branches takes the client's path instead when told which it is.
  std::vector<std::pair<std::string_view, std::string>> parameters = {
      {routing::kDeadlineParameter, ""}};
  if (walk.state.path >= 0)
    parameters.emplace_back(routing::kPathParameter, routing::Quoted(walk.PathName()));
  routing::CallVerdict failed{.error = {ErrorKind::kNotFound, ""}};
  int tried = -1;
  for (int attempt = 0; attempt < routing::kAttempts; ++attempt) {
    auto lease = co_await Pick(walk, table, task, variant, tried);
    // No other pod to try.
    if (!lease) co_return attempt == 0 ? lease.error() : walk.walker->NoPodLeft(task, failed);
    if (attempt > 0) metrics_.Retry(name);
    if (auto expired = walk.walker->BeforeCall(walk.state, task, NowMs())) co_return *expired;
    const auto remaining =
        std::chrono::duration_cast<std::chrono::milliseconds>(walk.Deadline() - Clock::now());
    parameters[0].second = std::to_string(remaining.count());
    const Endpoint& pod = *lease->pod;
    // The clock starts here, as the call leaves: whatever waited in the router before (a batch
    // filling, Kairos's queue) is not the pod's time.
    const auto start = Clock::now();
    const double sent_ms = NowMs();
    Result<UpstreamReply> reply = Error{ErrorKind::kTransient, "not sent"};
    int ahead = 0;
    {
      const Outstanding busy(lease->matcher ? nullptr : pod.outstanding.get(),
                             metrics_.TaskInFlight(name), table.peer_link.get());
      ahead = busy.ahead();
      const routing::Wire wire = body.Render(parameters);
      const auto pieces = wire.Pieces();
      const auto header_length =
          wire.binary.empty() ? std::nullopt : std::optional<size_t>(wire.JsonBytes());
      const auto timeout = std::chrono::milliseconds(static_cast<long>(std::ceil(
          walk.walker->AttemptTimeoutMs(table, walk.state, task, lease->index, attempt, NowMs()))));
      reply = co_await pool_.Post(pod.address, "/v2/models/" + name + "/infer", pieces,
                                  header_length, timeout);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    metrics_.Call(name, pod.variant, reply.ok() ? reply->status : 0, seconds);
    const routing::CallOutcome outcome =
        reply.ok() ? routing::CallOutcome{reply->status, reply->body}
                   : routing::CallOutcome{
                         .status = 0,
                         .detail = reply.error().message,
                         .pod_answered_meanwhile =
                             pod.ejection->answered_ms.load(std::memory_order_relaxed) > sent_ms};
    routing::CallVerdict verdict =
        walk.walker->AfterCall(walk.state, task, attempt, outcome, NowMs());
    if (verdict.eject) {
      Eject(table, task, pod);
    } else if (reply.ok()) {
      pod.ejection->Answered(NowMs());
    }
    if (verdict.kind == routing::CallVerdict::Kind::kDone) {
      co_return TaskReply{.call = {.body = std::move(reply->body),
                                   .header_length = std::move(reply->header_length),
                                   .variant = pod.variant,
                                   .variant_index = pod.variant_index,
                                   .seconds = seconds},
                          .facts = routing::CallFacts{.hardware_class = pod.hardware_class,
                                                      .rows = rows,
                                                      .pod_batches = pod.batch > 1,
                                                      .pod_was_idle = ahead == 0}};
    }
    if (verdict.kind == routing::CallVerdict::Kind::kFail) co_return std::move(verdict.error);
    failed = std::move(verdict);
    tried = lease->index;
  }
  co_return walk.walker->NoPodLeft(task, failed);
}

void PipelineHandler::Eject(const RoutingTable& table, int task, const Endpoint& pod) {
  const std::string& name = table.graph.TaskName(task);
  pod.ejection->Eject(NowMs());
  metrics_.Eject(name);
  if (pod.ejection->StartProbe()) Probe(pod, name, false);
  if (pod.node.empty()) return;
  // A silent pod may be a frozen or cut-off node, which silences its other pods with it: each is
  // probed at once, and left out until it answers (at once, when only the one pod hung), so a
  // request does not pay a give-up at one task and then another at the next.
  for (size_t t = 0; t < table.pods.size(); ++t) {
    for (const std::shared_ptr<Endpoint>& mate : table.pods[t]) {
      if (mate.get() == &pod || mate->node != pod.node || !mate->ejection->StartProbe()) continue;
      mate->ejection->Hold(NowMs() + 2 * kProbeTimeoutMs);
      Probe(*mate, table.graph.TaskName(static_cast<int>(t)), true);
    }
  }
}

void PipelineHandler::Probe(const Endpoint& pod, const std::string& task, bool at_once) {
  asio::co_spawn(pool_.executor(),
                 ProbeUntilReady(pod.ejection, pod.address, ModelReadyTarget(task), pool_, at_once),
                 ReportThrow{"router-probe"});
}

asio::awaitable<Result<PipelineHandler::TaskReply>> PipelineHandler::Send(
    const Walk& walk, const RoutingTable& table, int task, int variant, const routing::Body& body) {
  const auto [batcher, batch_variant] = table.BatcherFor(task, variant);
  if (!batcher) co_return co_await Call(walk, table, task, variant, body, walk.state.rows);
  const Batcher::Send send = [&, batch_variant = batch_variant](const routing::Body& batch,
                                                                int rows) {
    metrics_.Batch(table.graph.TaskName(task), rows);
    // A request the batcher cannot stack goes alone as the client sent it (the batcher counts it
    // 1 row): its rows are the request's.
    return SendBatch(walk, table, task, batch_variant, batch,
                     &batch == &body ? walk.state.rows : rows);
  };
  auto reply = co_await batcher->Submit(body, walk.Deadline(), send);
  if (!reply) co_return reply.error();
  co_return TaskReply{.call = std::move(*reply)};  // its batch was measured where it was sent
}

asio::awaitable<Result<CallReply>> PipelineHandler::SendBatch(const Walk& walk,
                                                              const RoutingTable& table, int task,
                                                              int variant,
                                                              const routing::Body& batch,
                                                              int rows) {
  auto reply = co_await Call(walk, table, task, variant, batch, rows);
  if (!reply) co_return reply.error();
  // Once per batch, not per request in it: the count is batches served.
  if (const auto answer = routing::ReadAnswer(reply->call.body, reply->call.header_length)) {
    MeasureBatch(table.graph.TaskName(task), reply->call, *reply->facts, answer->parameters);
  }
  co_return std::move(*reply).call;
}

void PipelineHandler::MeasureBatch(const std::string& task, const CallReply& call,
                                   const routing::CallFacts& facts, const json& parameters) {
  if (const auto sample = routing::BatchServiceSample(facts, call.seconds, parameters)) {
    metrics_.BatchService(task, call.variant, facts.hardware_class, sample->rows, sample->seconds);
  }
}

asio::awaitable<void> PipelineHandler::VisitAll(Walk& walk,
                                                std::vector<std::pair<int, routing::Body>> calls,
                                                const std::vector<int>& trail,
                                                std::pair<int, int> from) {
  if (calls.size() == 1) {
    co_await Visit(walk, calls[0].first, std::move(calls[0].second), trail, from);
    co_return;
  }
  // Fan-out: every call at once, this coroutine resuming when the last ends.
  std::vector<asio::awaitable<void>> branches;
  branches.reserve(calls.size());
  for (auto& [task, body] : calls) {
    branches.push_back(Visit(walk, task, std::move(body), trail, from));
  }
  // A branch that threw (a bug, logged by FanOut) fails the walk: never 200 with an output
  // missing.
  if (!(co_await FanOut(pool_.executor(), branches, "router-request")).empty()) {
    walk.state.Fail({.status = 500,
                     .reason = "bug",
                     .message = "a branch of the walk failed; the router's log says why"});
  }
}

asio::awaitable<void> PipelineHandler::Visit(Walk& walk, int task, routing::Body body,
                                             std::vector<int> trail, std::pair<int, int> from) {
  trail.push_back(task);
  const routing::Graph& graph = walk.table->graph;
  std::uniform_real_distribution<double> u(0, 1);
  const routing::VariantStep step = walk.walker->ChooseVariant(
      *walk.table, walk.state, task, from.first, from.second, NowMs(), u(rng_));
  if (step.kind == routing::VariantStep::Kind::kDrop) {
    metrics_.Drop(graph.TaskName(task), step.drop.reason);
    walk.state.Fail(step.drop);
    co_return;
  }
  if (step.kind == routing::VariantStep::Kind::kReroute) {
    metrics_.Reroute(graph.TaskName(task), graph.VariantName(task, step.variant));
  }
  auto reply = co_await Send(walk, *walk.table, task, step.variant, body);
  // No pod left to take the call (the task's only pod restarting, say): the visit waits for one
  // in a newer table, as the door does, and is served late rather than lost.
  // Each newer table is tried as it comes: one without a pod of the task fails at once, and
  // the walker says whether to wait on (WaitsForPod: its pods restarting) or give up.
  bool waited = false;
  for (std::shared_ptr<const RoutingTable> table = walk.table;
       !reply && config_.pods_follow &&
       walk.walker->WaitsForPod(*table, walk.state, task, reply.error(), NowMs());) {
    if (!std::exchange(waited, true)) metrics_.TaskWait(graph.TaskName(task));
    table = co_await NewerTable(walk, table, task);
    if (!table) break;
    reply = co_await Send(walk, *table, task, step.variant, body);
  }
  if (!reply) {
    walk.state.Fail(routing::FailureOf(reply.error()));
    co_return;
  }
  // Read in place: `answer` points into the reply, which lives until this visit ends.
  CallReply& call = reply->call;
  auto answer = routing::ReadAnswer(call.body, call.header_length);
  if (answer) {
    const auto queued = answer->parameters.find(routing::kQueueParameter);
    if (queued != answer->parameters.end() && queued->is_number() && *queued >= 0) {
      const double queue = std::min(call.seconds, queued->get<double>() / 1000);
      metrics_.Split(graph.TaskName(task), call.variant, queue, call.seconds - queue);
    }
    // A call of its own (not a router-formed batch's, measured once as it was sent).
    if (reply->facts) MeasureBatch(graph.TaskName(task), call, *reply->facts, answer->parameters);
  }
  auto next = answer ? graph.Next(walk.state.path, task, answer->parameters)
                     : Result<std::vector<routing::Call>>(answer.error());
  if (!next) {
    walk.state.Fail(walk.walker->BadAnswer(task, next.error()));
    co_return;
  }
  if (next->empty()) {
    if (Status kept = KeepOutputs(walk, task, call, *answer); !kept) {
      walk.state.Fail(walk.walker->BadAnswer(task, kept.error()));
      co_return;
    }
    walk.walker->EndTrail(walk.state, trail, NowMs());
    co_return;
  }
  auto calls = CallsOf(*next, routing::NextBody(*answer, body));
  // Coroutines get named values only: GCC 12 destroys a prvalue argument of a coroutine twice
  // (AddressSanitizer caught it), and a temporary may end at the suspension.
  const std::pair<int, int> here{task, call.variant_index};
  co_await VisitAll(walk, std::move(calls), trail, here);
}

Status PipelineHandler::KeepOutputs(Walk& walk, int task, CallReply& call,
                                    const routing::Answer& answer) {
  const std::string& name = walk.table->graph.TaskName(task);
  auto named = routing::NamedOutputs(name, answer.outputs);
  if (!named) return named.error();
  for (std::string& o : *named) walk.outputs.push_back(std::move(o));
  // The outputs' binary data goes to the client in the answer it came in, which the walk keeps.
  if (!answer.binary.empty()) {
    walk.parts.push_back({.held = walk.held.size(),
                          .offset = static_cast<size_t>(answer.binary.data() - call.body.data()),
                          .size = answer.binary.size()});
    walk.held.push_back(std::move(call.body));
  }
  return Done{};
}

routing::DoorStep PipelineHandler::AtDoor(Walk& walk) {
  prometheus::Gauge& cold = metrics_.ColdRequests(walk.PathName());
  routing::DoorStep step = walk.walker->AtDoor(*walk.table, walk.state, NowMs(), cold.Value());
  if (walk.state.cold && !walk.state.behind_held && !walk.cold) walk.cold.emplace(cold);
  return step;
}

asio::awaitable<std::optional<ClientResponse>> PipelineHandler::WaitAtDoor(Walk& walk) {
  // The first look admits or refuses most requests: only one that waits is counted as waiting.
  const routing::DoorStep first = AtDoor(walk);
  if (first.kind != routing::DoorStep::Kind::kWait) co_return DoorVerdict(walk, first);
  // Counted while it waits, however the wait ends (a client that hangs up ends the coroutine).
  std::optional<ClientResponse> verdict;
  {
    const Counted waiting(metrics_.DoorWaiting(walk.PathName()));
    verdict = co_await WaitForPods(walk, first);
  }
  if (walk.state.cold) metrics_.Cold(walk.PathName(), (NowMs() - walk.state.start_ms) / 1000);
  co_return verdict;
}

std::optional<ClientResponse> PipelineHandler::DoorVerdict(const Walk& walk,
                                                           const routing::DoorStep& step) {
  if (step.kind != routing::DoorStep::Kind::kRefuse) return std::nullopt;
  metrics_.Shed(walk.PathName(), step.refusal.reason.c_str());
  return Refusal(step.refusal.message);
}

asio::awaitable<std::optional<ClientResponse>> PipelineHandler::WaitForPods(
    Walk& walk, routing::DoorStep step) {
  asio::steady_timer timer(pool_.executor());
  while (step.kind == routing::DoorStep::Kind::kWait) {
    // Pods appear in a new table: a request waiting for them reads each in turn.
    co_await SleepMs(timer, step.again_ms - NowMs());
    walk.Use(config_.table.load(), config_.policy);
    step = AtDoor(walk);
  }
  co_return DoorVerdict(walk, step);
}

asio::awaitable<std::shared_ptr<const RoutingTable>> PipelineHandler::NewerTable(
    const Walk& walk, std::shared_ptr<const RoutingTable> last, int task) {
  asio::steady_timer timer(pool_.executor());
  const routing::Graph& graph = walk.table->graph;
  while (walk.state.deadline_ms - NowMs() > routing::kDoorPollMs) {
    co_await SleepMs(timer, routing::kDoorPollMs);
    std::shared_ptr<const RoutingTable> now = config_.table.load();
    // The walk's indices hold in a table of the same tasks only (a new spec may have others).
    if (now && now != last && now->graph.tasks().size() == graph.tasks().size() &&
        now->graph.TaskName(task) == graph.TaskName(task)) {
      co_return now;
    }
  }
  co_return nullptr;
}

asio::awaitable<ClientResponse> PipelineHandler::Infer(const HttpRequest& request) {
  const double start_ms = NowMs();
  if (config_.in_flight.load() >= config_.max_in_flight) {
    metrics_.Request("", 503, 0);
    co_return Refusal("the router is at its limit of " + std::to_string(config_.max_in_flight) +
                      " requests in flight");
  }
  const InFlight counted(config_, metrics_);
  const auto header = [&request](std::string_view name) {
    const auto value = request[beast::string_view(name.data(), name.size())];
    return std::string_view(value.data(), value.size());
  };
  auto parsed = routing::ParseInferRequest(
      request.body(),
      {.path = header(routing::kPathHeader), .header_length = header(routing::kHeaderLengthField)});
  if (!parsed) {
    metrics_.Request("", 400, 0);
    co_return ErrorReply(400, parsed.error().message);
  }
  Walk walk;
  std::shared_ptr<const RoutingTable> table = config_.table.load();
  if (!table) {
    metrics_.Request("", 503, 0);
    co_return Refusal("the router has not read its pipeline yet");
  }
  const auto path = table->graph.FindPath(parsed->path);
  if (!path) {
    metrics_.Request("", 404, 0);
    co_return ErrorReply(404, path.error().message);
  }
  walk.Use(std::move(table), config_.policy);
  metrics_.arrivals().Arrived(walk.table->graph, *path, ArrivalMeter::NowSecond());
  // What the clients send, answered or not, once per request: a mix of the answered alone
  // would hide the queries an overloaded pool drops, the very ones a re-plan is for.
  metrics_.QueryRows(parsed->query_size);
  walk.state = walk.walker->Start(*path, parsed->query_size, start_ms);
  if (auto refused = co_await WaitAtDoor(walk)) {
    metrics_.Request(walk.PathName(), 503, 0);
    co_return std::move(*refused);
  }
  auto calls = CallsOf(walk.table->graph.Entry(walk.state.path), std::move((*parsed).body));
  const std::vector<int> start_trail;
  const std::pair<int, int> entering{-1, -1};
  co_await VisitAll(walk, std::move(calls), start_trail, entering);
  co_return Answer(walk, parsed->id);
}

ClientResponse PipelineHandler::Answer(Walk& walk, const std::string& id) {
  const routing::Ending ending = walk.walker->Finish(walk.state, NowMs());
  if (ending.status == 504) metrics_.Late(walk.PathName());
  std::vector<std::string> paths;
  for (const routing::Ending::Count& count : ending.counts) {
    const std::string& name = walk.table->graph.PathName(count.path);
    metrics_.Request(name, ending.status, count.ms / 1000);
    paths.push_back(name);
  }
  if (ending.status != 200) return ErrorReply(ending.status, ending.failure.message);
  std::sort(paths.begin(), paths.end());
  ClientResponse answer =
      Reply(200, routing::AnswerJson(config_.pipeline, walk.outputs, paths, id));
  if (!walk.parts.empty()) {
    answer.set(http::field::content_type, "application/octet-stream");
    answer.set(
        beast::string_view(routing::kHeaderLengthField.data(), routing::kHeaderLengthField.size()),
        std::to_string(answer.body().text.size()));
    answer.body().held = std::move(walk.held);
    answer.body().parts = std::move(walk.parts);
  }
  return answer;
}

}  // namespace pipescale::router
