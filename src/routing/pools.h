// Kairos's and MArk's halves in the request path, for a task served by a pool of replicas across
// hardware classes: Kairos's queue (one query in flight per replica, waiting queries matched to
// replicas at least cost at every arrival and completion) and MArk's spill to the warm burst
// class. Pure: the caller passes the time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace pipescale::routing {

// Why a request was dropped at a pool, as the router's drop counter names it (Kairos drops a
// query that arrives at a full queue).
inline constexpr const char* kPoolFull = "pool queue full";

struct PoolReplica {
  int id = 0;              // the caller's name for it
  int hardware_class = 0;  // an index into KairosQueue::Options's per-class vectors
};

class KairosQueue {
 public:
  struct Options {
    std::vector<std::function<double(int)>> latency_ms;  // by class: ms for a query of a size
    std::vector<double> coefficient;                     // by class: Kairos's C_j
    double qos_ms = 0;
    double xi = 0.98;
    int queue_per_replica = 2;  // Kairos's queue holds at most this many queries per replica
    bool fcfs = false;          // first come, first served to the first idle replica (the baseline)
  };
  explicit KairosQueue(Options options) : options_(std::move(options)) {}
  // New costs and limits; what waits and what is in flight stay.
  void Reconfigure(Options options) { options_ = std::move(options); }

  // The replicas that serve now. One that stays keeps its query in flight; one that goes is
  // forgotten (its Complete is then ignored); a new one is idle.
  void SetReplicas(std::span<const PoolReplica> replicas);

  // A query of `size` rows arrives; false when the queue is full (Kairos drops it).
  bool Arrive(std::uint64_t query, int size, double now_ms);
  // A waiting query gives up (its deadline passed).
  void Leave(std::uint64_t query);
  // The replica's query is done: it is idle.
  void Complete(int replica);
  // Whether another router replica has a query at `replica` (routing/peer_counts.h). Such a
  // replica starts nothing here until it is free again; how long its query still needs is not
  // reported, so the matching takes it as its class's time for a query of one row from when it
  // was first reported busy: the least any query takes.
  void SetBusyElsewhere(int replica, bool busy, double now_ms);

  // Which waiting queries start now, and where: Kairos's matching over every replica (a busy
  // one through the time it still needs, as predicted when its query started), of which only
  // the pairs with an idle replica start; or first come, first served. Each replica chosen is
  // busy from here until Complete.
  struct Start {
    std::uint64_t query = 0;
    int replica = 0;
    bool operator==(const Start&) const = default;
  };
  std::vector<Start> Match(double now_ms);

  // An estimate of how long a query of `size` rows arriving now would take, as the door judges it:
  // the queries waiting go first, each to the replica free soonest (the one in flight as predicted
  // when it started); then this one at whichever replica would finish it soonest, in d(size) of
  // that replica's class. nullopt with no replica. Kairos runs each query alone, so the pod's
  // batch size says nothing of it.
  std::optional<double> PredictMs(int size, double now_ms) const;

  size_t waiting() const { return queue_.size(); }
  size_t capacity() const { return replicas_.size() * options_.queue_per_replica; }

 private:
  struct Waiting {
    std::uint64_t query;
    int size;
    double arrived_ms;
  };
  struct Replica {
    PoolReplica spec;
    bool busy = false;
    double done_ms = 0;  // predicted, while busy
    bool elsewhere = false;
    double elsewhere_done_ms = 0;  // predicted, while busy elsewhere
    bool idle() const { return !busy && !elsewhere; }
    // How long until it is free, as predicted.
    double FreeInMs(double now_ms) const {
      return std::max(
          {0.0, busy ? done_ms - now_ms : 0, elsewhere ? elsewhere_done_ms - now_ms : 0});
    }
  };
  double Ms(const Replica& r, int rows) const;  // d(rows) on the replica's class
  std::vector<std::pair<size_t, size_t>> Pairs(double now_ms) const;  // (queue, replica)

  Options options_;
  std::vector<Waiting> queue_;  // in arrival order
  std::vector<Replica> replicas_;
};

// MArk's bouncer for one request: whether every main replica would serve it past `rt_max_ms`,
// each predicted from the requests it already holds, served in batches of its batch size.
struct MainReplica {
  int outstanding = 0;  // requests sent and not yet answered
  int batch = 1;        // its batch size
  double batch_ms = 0;  // d(batch) on its class
};
bool ShouldSpill(std::span<const MainReplica> main, double rt_max_ms);

}  // namespace pipescale::routing
