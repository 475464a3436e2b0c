#include "metrics.h"

#include <charconv>

#include "routing/admission.h"
#include "routing/loki.h"
#include "routing/pools.h"
#include "routing/request.h"

namespace pipescale::router {
namespace {

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

// A task's calls take from a millisecond (a small model) to seconds (a large batch).
prometheus::Histogram::BucketBoundaries CallBuckets() {
  return {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};
}

// Seconds a cold request waited at the door: start-ups run from seconds to minutes.
prometheus::Histogram::BucketBoundaries ColdWaitBuckets() {
  return {0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300};
}

// Rows of a batch the router forms.
prometheus::Histogram::BucketBoundaries BatchBuckets() { return {1, 2, 4, 8, 16, 32, 64, 128}; }

}  // namespace

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
                      .Add(Labels({}), routing::QuerySizeBounds())),
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
      ejections_(prometheus::BuildCounter()
                     .Name("pipescale_router_ejections_total")
                     .Help("Pods left out of picks for a while after a call they left "
                           "unanswered (connection failed or reset, or too slow to answer)")
                     .Register(r)),
      task_waits_(prometheus::BuildCounter()
                      .Name("pipescale_router_task_waits_total")
                      .Help("Visits that waited at a task for a pod (its only pod died under "
                            "the call or is restarting), held up to the path's hold")
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
      door_waiting_(prometheus::BuildGauge()
                        .Name("pipescale_router_door_waiting_requests")
                        .Help("Requests held at the door now for a task of their path without "
                              "a Ready pod (path \"\": requests naming none)")
                        .Register(*door_registry_)),
      cold_requests_(prometheus::BuildGauge()
                         .Name("pipescale_router_cold_requests")
                         .Help("Cold requests not yet answered: held at the door for their "
                               "path's pods (asleep or restarting), or let in since; the backlog "
                               "of a wake or a restart, behind which the door holds a request "
                               "it would refuse as late")
                         .Register(r)),
      cold_wait_(prometheus::BuildHistogram()
                     .Name("pipescale_router_cold_wait_seconds")
                     .Help("How long each cold request (held for a path asleep under "
                           "spec.scaleToZero, or for a task's only pod restarting) waited at "
                           "the door, admitted or refused")
                     .Register(r)),
      in_flight_(prometheus::BuildGauge()
                     .Name("pipescale_router_in_flight_requests")
                     .Help("Requests the router is serving now")
                     .Register(r)
                     .Add(Labels({}))),
      peers_(prometheus::BuildGauge()
                 .Name("pipescale_router_peers")
                 .Help("The pipeline's other router replicas whose counts at the model pods "
                       "reached this one within the last 300 ms")
                 .Register(r)
                 .Add(Labels({}))),
      arrivals_(std::make_shared<ArrivalMeter>(config.namespace_name, config.pipeline)) {}

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

void RouterMetrics::Declare(const routing::Graph& graph) {
  for (const std::string& path : graph.paths()) {
    requests_.Add(Labels({{"path", path}, {"code", "200"}}));
    late_.Add(Labels({{"path", path}}));
    for (const char* reason : routing::kShedReasons)
      shed_.Add(Labels({{"path", path}, {"reason", reason}}));
    door_waiting_.Add(Labels({{"path", path}}));
    cold_requests_.Add(Labels({{"path", path}}));
    cold_wait_.Add(Labels({{"path", path}}), ColdWaitBuckets());
  }
  for (size_t t = 0; t < graph.tasks().size(); ++t) {
    const std::string& task = graph.tasks()[t];
    retries_.Add(Labels({{"task", task}}));
    ejections_.Add(Labels({{"task", task}}));
    task_waits_.Add(Labels({{"task", task}}));
    task_in_flight_.Add(Labels({{"task", task}}));
    for (const char* reason : routing::kDropReasons) {
      drops_.Add(Labels({{"task", task}, {"reason", reason}}));
    }
    drops_.Add(Labels({{"task", task}, {"reason", routing::kPoolFull}}));
    spills_.Add(Labels({{"task", task}}));
    pool_waiting_.Add(Labels({{"task", task}}));
    batch_rows_.Add(Labels({{"task", task}}), BatchBuckets());
    for (const std::string& v : graph.variants(static_cast<int>(t))) {
      reroutes_.Add(Labels({{"task", task}, {"variant", v}}));
    }
  }
}

prometheus::Gauge& RouterMetrics::DoorWaiting(const std::string& path) {
  return Cached(door_waiting_, {path}, [&] {
    return &door_waiting_.Add(Labels({{"path", path}}));
  });
}

prometheus::Gauge& RouterMetrics::ColdRequests(const std::string& path) {
  return Cached(cold_requests_, {path}, [&] {
    return &cold_requests_.Add(Labels({{"path", path}}));
  });
}

void RouterMetrics::Cold(const std::string& path, double seconds) {
  Cached(cold_wait_, {path}, [&] {
    return &cold_wait_.Add(Labels({{"path", path}}), ColdWaitBuckets());
  }).Observe(seconds);
}

void RouterMetrics::Retry(const std::string& task) {
  Cached(retries_, {task}, [&] { return &retries_.Add(Labels({{"task", task}})); }).Increment();
}

void RouterMetrics::Eject(const std::string& task) {
  Cached(ejections_, {task}, [&] { return &ejections_.Add(Labels({{"task", task}})); }).Increment();
}

void RouterMetrics::TaskWait(const std::string& task) {
  Cached(task_waits_, {task}, [&] {
    return &task_waits_.Add(Labels({{"task", task}}));
  }).Increment();
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

}  // namespace pipescale::router
