#include "matcher.h"

#include "handler.h"

namespace pipescale::router {

double Matcher::Now() const {
  return std::chrono::duration<double, std::milli>(Clock::now() - epoch_).count();
}

void Matcher::Configure(double qos_ms, bool fcfs, const std::vector<Replica>& replicas) {
  std::lock_guard lock(mu_);
  routing::KairosQueue::Options options{.qos_ms = qos_ms, .fcfs = fcfs};
  std::vector<routing::PoolReplica> specs;
  replicas_.clear();
  for (const Replica& r : replicas) {
    const int id = ids_.emplace(r.endpoint->address, static_cast<int>(ids_.size())).first->second;
    const int c = classes_.emplace(r.class_key, static_cast<int>(classes_.size())).first->second;
    if (options.latency_ms.size() <= static_cast<size_t>(c)) {
      options.latency_ms.resize(c + 1, [](int) { return 0.0; });
      options.coefficient.resize(c + 1, 1);
    }
    options.latency_ms[c] = r.latency_ms;
    options.coefficient[c] = r.coefficient;
    replicas_[id] = r.endpoint;
    specs.push_back({id, c});
  }
  if (queue_) {
    queue_->Reconfigure(std::move(options));
  } else {
    queue_.emplace(std::move(options));
  }
  queue_->SetReplicas(specs);
  Match();  // new replicas may take what waits
}

void Matcher::Match() {
  const double now = Now();
  for (const auto& [id, endpoint] : replicas_) {
    const auto& peers = endpoint->peers;
    queue_->SetBusyElsewhere(id, peers && peers->load(std::memory_order_relaxed) > 0, now);
  }
  Start(queue_->Match(now));
}

void Matcher::Start(const std::vector<routing::KairosQueue::Start>& starts) {
  for (const routing::KairosQueue::Start& s : starts) {
    auto waiter = waiters_.extract(s.query);
    if (waiter.empty()) continue;
    const std::shared_ptr<Endpoint>& replica = replicas_.at(s.replica);
    // Counted at once, here under the lock, not when the waiter's call leaves: a replica whose
    // answer starts this router's next query there never reads idle to the other routers.
    ++*replica->outstanding;
    if (peers_) peers_->Nudge();
    std::shared_ptr<Waiter> w = std::move(waiter.mapped());
    w->served = replica;
    // The timer belongs to the waiter's loop: cancel it there.
    asio::post(w->wake.get_executor(), [w] { w->wake.cancel(); });
  }
}

asio::awaitable<Result<std::shared_ptr<Endpoint>>> Matcher::Acquire(
    const asio::any_io_executor& executor, int rows, Clock::time_point deadline) {
  auto waiter = std::make_shared<Waiter>(executor);
  waiter->wake.expires_at(deadline);
  std::uint64_t query = 0;
  {
    std::lock_guard lock(mu_);
    if (!queue_ || replicas_.empty()) co_return Error{ErrorKind::kNotFound, "no ready replica"};
    query = next_query_++;
    if (!queue_->Arrive(query, rows, Now())) {
      co_return Error{ErrorKind::kUnavailable, "the pool's queue is full"};
    }
    waiters_[query] = waiter;
    Match();
    if (waiter->served) co_return waiter->served;
  }
  // Woken by Start's cancel (posted to this loop, so it runs only once this wait is set), or
  // at the deadline.
  beast::error_code ec;
  co_await waiter->wake.async_wait(Redirect(ec));
  std::lock_guard lock(mu_);
  if (waiter->served) co_return waiter->served;
  queue_->Leave(query);
  waiters_.erase(query);
  co_return Error{ErrorKind::kExpired, "the deadline passed while the request waited in the pool"};
}

void Matcher::Release(const Endpoint& replica) {
  {
    std::lock_guard lock(mu_);
    const auto id = ids_.find(replica.address);
    if (id != ids_.end() && queue_) {
      queue_->Complete(id->second);
      Match();
    }
  }
  --*replica.outstanding;  // after the next start there, if any
  if (peers_) peers_->Nudge();
}

void Matcher::Rematch() {
  std::lock_guard lock(mu_);
  if (queue_) Match();
}

std::optional<double> Matcher::PredictMs(int rows) const {
  std::lock_guard lock(mu_);
  return queue_ ? queue_->PredictMs(rows, Now()) : std::nullopt;
}

size_t Matcher::waiting() const {
  std::lock_guard lock(mu_);
  return queue_ ? queue_->waiting() : 0;
}

}  // namespace pipescale::router
