// One router thread's answer to each HTTP request: the Open Inference Protocol endpoints of the
// pipeline as one model, and each request's walk over the model pods. The walk's decisions are
// the pure core's (routing/walk.h: the door, the variant, the pod, a retry, the answer); here
// are only their I/O: waiting, the calls to the pods, the router's batches and Kairos's queue,
// and the metrics of every request and call.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "asio.h"
#include "config.h"
#include "metrics.h"
#include "routing/batch_sample.h"
#include "routing/body.h"
#include "routing/walk.h"
#include "routing_table.h"
#include "spliced_body.h"
#include "upstream.h"

namespace pipescale::router {

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
  using Clock = std::chrono::steady_clock;
  // The router's steady clock in the core's milliseconds.
  static double NowMs();
  asio::awaitable<ClientResponse> Infer(const HttpRequest& request);
  // The health, readiness and metadata endpoints.
  ClientResponse Describe(std::string_view target) const;
  // Waits at the door while the core says so (reading each new table for the pods it waits
  // for); the 503 that refuses the request, or nothing when it may go in.
  asio::awaitable<std::optional<ClientResponse>> WaitAtDoor(Walk& walk);
  asio::awaitable<std::optional<ClientResponse>> WaitForPods(Walk& walk, routing::DoorStep step);
  std::optional<ClientResponse> DoorVerdict(const Walk& walk, const routing::DoorStep& step);
  // The core's door for `walk`, given its path's cold requests (the backlog a request late
  // because of it is held behind), which it joins once held for its path's pods.
  routing::DoorStep AtDoor(Walk& walk);
  // A task's answer, with what its batch-service sample needs: `facts` is empty for an answer
  // out of the router's batcher, whose batch was measured once where it was sent (SendBatch).
  struct TaskReply {
    CallReply call;
    std::optional<routing::CallFacts> facts;
  };
  // A call to one of `task`'s pods in `table` (the walk's, or a newer one a visit waited for),
  // tried again on another as the core says; `rows`: the rows it carries (CallFacts::rows).
  asio::awaitable<Result<TaskReply>> Call(const Walk& walk, const RoutingTable& table, int task,
                                          int variant, const routing::Body& body, int rows);
  // Call, or through the task's batcher when the router forms its batches.
  asio::awaitable<Result<TaskReply>> Send(const Walk& walk, const RoutingTable& table, int task,
                                          int variant, const routing::Body& body);
  // The call for a batch the router formed (`rows` rows), its service measured once here: each
  // request of the batch gets its rows of this answer from the batcher.
  asio::awaitable<Result<CallReply>> SendBatch(const Walk& walk, const RoutingTable& table,
                                               int task, int variant, const routing::Body& batch,
                                               int rows);
  // `pod` of `task` left a call unanswered: out of picks until it answers a probe, and each other
  // pod on its node too until it answers one of its own.
  void Eject(const RoutingTable& table, int task, const Endpoint& pod);
  // Runs `pod`'s readiness probe (a pod of `task`; ProbeUntilReady), its StartProbe won.
  void Probe(const Endpoint& pod, const std::string& task, bool at_once);
  // The batch-service sample of an answered call, if it makes one.
  void MeasureBatch(const std::string& task, const CallReply& call, const routing::CallFacts& facts,
                    const nlohmann::json& parameters);
  // A pod for the call, held until its answer: a matched pool's replica goes back to its
  // matcher when the lease ends.
  struct Lease {
    std::shared_ptr<Endpoint> pod;
    int index = -1;  // among the table's pods of the task; -1 for a matched pool's
    std::shared_ptr<Matcher> matcher;
    Lease(std::shared_ptr<Endpoint> p, int i, std::shared_ptr<Matcher> m)
        : pod(std::move(p)), index(i), matcher(std::move(m)) {}
    Lease(Lease&&) = default;  // leaves the moved-from lease empty
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
  };
  // Which pod: the matcher's, else the core's pick among the task's pods other than `tried`.
  asio::awaitable<Result<Lease>> Pick(const Walk& walk, const RoutingTable& table, int task,
                                      int variant, int tried);
  // The next table newer than `last` of the walk's tasks (in which its indices hold); null once
  // the walk's deadline leaves no time to wait for one.
  asio::awaitable<std::shared_ptr<const RoutingTable>> NewerTable(
      const Walk& walk, std::shared_ptr<const RoutingTable> last, int task);
  // One visit of a request at `task`, `from` being the (task, variant) that served it before.
  asio::awaitable<void> Visit(Walk& walk, int task, routing::Body body, std::vector<int> trail,
                              std::pair<int, int> from);
  asio::awaitable<void> VisitAll(Walk& walk, std::vector<std::pair<int, routing::Body>> calls,
                                 const std::vector<int>& trail, std::pair<int, int> from);
  // The answer of a visit's task that ended a trail: its outputs, and its binary data held.
  static Status KeepOutputs(Walk& walk, int task, CallReply& call, const routing::Answer& answer);
  // The client's answer once every visit has ended, and its metrics.
  ClientResponse Answer(Walk& walk, const std::string& id);

  RouterConfig& config_;
  RouterMetrics& metrics_;
  UpstreamPool& pool_;
  std::mt19937_64 rng_;
  // The pipeline as one model's endpoints, fixed for the router's life.
  const std::string model_target_, infer_target_;
};

}  // namespace pipescale::router
