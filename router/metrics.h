// The router's Prometheus series: every request and path, every call to a task's pods, what the
// data plane's policies did (drops, reroutes, spills, refusals, batches) and the batch service
// times the operator learns profiles from. Written on the request path without a lock or an
// allocation once a series is known.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/summary.h>

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "arrival_meter.h"
#include "config.h"
#include "routing/graph.h"

namespace pipescale::router {

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
  // A pod of `task` left out of picks for a call it left unanswered (routing::kEjectMs).
  void Eject(const std::string& task);
  // A visit waiting at `task` for a pod (its only pod died under the call, or is restarting).
  void TaskWait(const std::string& task);
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
  // A request refused at the door, by reason (routing::kShedReasons).
  void Shed(const std::string& path, const char* reason);
  // Requests held at the door now for a task without a Ready pod (what wakes a pipeline at zero).
  prometheus::Gauge& DoorWaiting(const std::string& path);
  // Cold requests not yet answered, at the door or let in: a wake's or a restart's backlog.
  prometheus::Gauge& ColdRequests(const std::string& path);
  // A cold request (held for a sleeping path) leaving the door after `seconds`, in or refused.
  void Cold(const std::string& path, double seconds);
  // Every path's and task's counters at 0, so a path without requests yet reads as rate 0,
  // not as missing (the operator holds its plan while a series is missing), and a dashboard
  // shows no retries rather than no data.
  void Declare(const routing::Graph& graph);
  prometheus::Gauge& in_flight() { return in_flight_; }
  // The replicas whose counts this one reads (router/peers.h): fewer than the Ready replicas
  // less one means they do not reach each other (UDP blocked between the pods).
  prometheus::Gauge& peers() { return peers_; }
  // Each task's arrivals, for how bursty they are: served beside the registry (it computes its
  // gauge when scraped), so the exposer must be given `arrival_collectable()` too.
  ArrivalMeter& arrivals() { return *arrivals_; }
  std::shared_ptr<prometheus::Collectable> arrival_collectable() const { return arrivals_; }
  // The requests held at the door, apart from the registry: the exposer serves it both with the
  // rest and alone at api::kRouterDoorPath.
  std::shared_ptr<prometheus::Collectable> door_collectable() const { return door_registry_; }

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
  prometheus::Family<prometheus::Counter>& ejections_;
  prometheus::Family<prometheus::Counter>& task_waits_;
  prometheus::Family<prometheus::Counter>& drops_;
  prometheus::Family<prometheus::Counter>& reroutes_;
  prometheus::Family<prometheus::Counter>& spills_;
  prometheus::Family<prometheus::Gauge>& pool_waiting_;
  prometheus::Family<prometheus::Histogram>& batch_rows_;
  prometheus::Family<prometheus::Summary>& batch_service_;
  prometheus::Family<prometheus::Counter>& late_;
  prometheus::Family<prometheus::Counter>& shed_;
  prometheus::Family<prometheus::Gauge>& task_in_flight_;
  // The door's gauge alone, also served at api::kRouterDoorPath: the operator's door watch reads
  // it ten times a second while a path sleeps, and the whole exposition is ~40 KB.
  const std::shared_ptr<prometheus::Registry> door_registry_ =
      std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Gauge>& door_waiting_;
  prometheus::Family<prometheus::Gauge>& cold_requests_;
  prometheus::Family<prometheus::Histogram>& cold_wait_;
  prometheus::Gauge& in_flight_;
  prometheus::Gauge& peers_;
  std::shared_ptr<ArrivalMeter> arrivals_;
};

}  // namespace pipescale::router
