// Kairos's matcher for one task, shared by every router thread: a request waits in the task's
// one queue until the matching (routing/pools.h) starts it on a replica with nothing in flight,
// from this router or, as they report (peers.h), the other router replicas; the replica's
// answer frees it and matches again, as does a report that frees one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "asio.h"
#include "common/result.h"
#include "routing/pools.h"

namespace pipescale::router {

struct Endpoint;
class PeerLink;

class Matcher {
 public:
  using Clock = std::chrono::steady_clock;

  // `peers`: told of each change of a replica's count (null: the counts are this router's alone).
  explicit Matcher(std::shared_ptr<const PeerLink> peers = nullptr) : peers_(std::move(peers)) {}

  struct Replica {
    std::shared_ptr<Endpoint> endpoint;
    std::string class_key;                  // replicas alike in cost share one ("b7/gpu")
    std::function<double(int)> latency_ms;  // by query rows, on its class
    double coefficient = 1;                 // Kairos's C_j of its class
  };
  // The replicas and how to cost them; called at every routing-table change. A replica that
  // stays (same address and class) keeps its query in flight.
  void Configure(double qos_ms, bool fcfs, const std::vector<Replica>& replicas);

  // The replica a query of `rows` rows is started on, counted outstanding there from then until
  // Release (the caller's call adds nothing to that count). kUnavailable when the queue is full,
  // kNotFound when the task has no replica, kExpired when `deadline` passes first. The caller
  // calls Release when the replica's answer comes.
  // `executor` is the calling coroutine's loop, where it waits.
  asio::awaitable<Result<std::shared_ptr<Endpoint>>> Acquire(const asio::any_io_executor& executor,
                                                             int rows, Clock::time_point deadline);
  void Release(const Endpoint& replica);
  // The other routers' counts changed: a replica they freed may take what waits.
  void Rematch();

  // KairosQueue::PredictMs now: what the door reads for a query of `rows` rows.
  std::optional<double> PredictMs(int rows) const;

  size_t waiting() const;

 private:
  struct Waiter {
    explicit Waiter(const asio::any_io_executor& executor) : wake(executor) {}
    asio::steady_timer wake;           // on the waiting coroutine's own loop
    std::shared_ptr<Endpoint> served;  // set under the lock when it starts
  };
  double Now() const;
  // The other routers' calls, as last reported, then the matching's starts; under mu_.
  void Match();
  void Start(const std::vector<routing::KairosQueue::Start>& starts);

  const std::shared_ptr<const PeerLink> peers_;
  mutable std::mutex mu_;
  std::optional<routing::KairosQueue> queue_;
  std::map<std::uint64_t, std::shared_ptr<Waiter>> waiters_;
  std::map<int, std::shared_ptr<Endpoint>> replicas_;  // by id
  std::map<std::string, int> ids_;                     // address -> id, never reused
  std::map<std::string, int> classes_;                 // class key -> index, never reused
  std::uint64_t next_query_ = 0;
  const Clock::time_point epoch_ = Clock::now();
};

}  // namespace pipescale::router
