#include "routing/pools.h"

#include <algorithm>
#include <cmath>

#include "optimizer/kairos.h"
#include "optimizer/mark.h"
#include "routing/admission.h"

namespace pipescale::routing {

namespace kairos = optimizer::kairos;

void KairosQueue::SetReplicas(std::span<const PoolReplica> replicas) {
  std::vector<Replica> next;
  next.reserve(replicas.size());
  for (const PoolReplica& r : replicas) {
    const auto same = std::find_if(replicas_.begin(), replicas_.end(), [&](const Replica& old) {
      return old.spec.id == r.id && old.spec.hardware_class == r.hardware_class;
    });
    next.push_back(same != replicas_.end() ? *same : Replica{r});
  }
  replicas_ = std::move(next);
}

bool KairosQueue::Arrive(std::uint64_t query, int size, double now_ms) {
  if (queue_.size() >= capacity()) return false;
  queue_.push_back({query, std::max(1, size), now_ms});
  return true;
}

void KairosQueue::Leave(std::uint64_t query) {
  std::erase_if(queue_, [&](const Waiting& w) { return w.query == query; });
}

void KairosQueue::Complete(int replica) {
  for (Replica& r : replicas_) {
    if (r.spec.id == replica) r.busy = false;
  }
}

void KairosQueue::SetBusyElsewhere(int replica, bool busy, double now_ms) {
  for (Replica& r : replicas_) {
    if (r.spec.id != replica || r.elsewhere == busy) continue;
    r.elsewhere = busy;
    r.elsewhere_done_ms = now_ms + Ms(r, 1);
  }
}

double KairosQueue::Ms(const Replica& r, int rows) const {
  const auto& latency = options_.latency_ms;
  const auto c = static_cast<size_t>(r.spec.hardware_class);
  return c < latency.size() && latency[c] ? latency[c](std::max(1, rows)) : 0.0;
}

std::vector<std::pair<size_t, size_t>> KairosQueue::Pairs(double now_ms) const {
  std::vector<std::pair<size_t, size_t>> pairs;
  if (options_.fcfs) {
    size_t next = 0;
    for (size_t j = 0; j < replicas_.size() && next < queue_.size(); ++j) {
      if (replicas_[j].idle()) pairs.emplace_back(next++, j);
    }
    return pairs;
  }
  std::vector<kairos::Query> queries;
  queries.reserve(queue_.size());
  for (const Waiting& w : queue_) queries.push_back({w.size, now_ms - w.arrived_ms});
  std::vector<kairos::Instance> instances;
  instances.reserve(replicas_.size());
  for (const Replica& r : replicas_) {
    instances.push_back({r.spec.hardware_class, r.FreeInMs(now_ms)});
  }
  const std::vector<int> match = kairos::Dispatch(
      queries, instances, options_.latency_ms, options_.coefficient, options_.qos_ms, options_.xi);
  for (size_t i = 0; i < match.size(); ++i) {
    if (match[i] >= 0 && replicas_[match[i]].idle()) pairs.emplace_back(i, match[i]);
  }
  return pairs;
}

std::vector<KairosQueue::Start> KairosQueue::Match(double now_ms) {
  if (queue_.empty() ||
      std::none_of(replicas_.begin(), replicas_.end(), [](const Replica& r) { return r.idle(); })) {
    return {};
  }
  std::vector<Start> starts;
  std::vector<char> started(queue_.size(), 0);
  for (const auto& [i, j] : Pairs(now_ms)) {
    Replica& r = replicas_[j];
    r.busy = true;
    r.done_ms = now_ms + Ms(r, queue_[i].size);
    starts.push_back({queue_[i].query, r.spec.id});
    started[i] = 1;
  }
  size_t i = 0;
  std::erase_if(queue_, [&](const Waiting&) { return started[i++] != 0; });
  return starts;
}

std::optional<double> KairosQueue::PredictMs(int size, double now_ms) const {
  std::vector<double> free_at;  // ms from now, by replica
  free_at.reserve(replicas_.size());
  for (const Replica& r : replicas_) free_at.push_back(r.FreeInMs(now_ms));
  for (const Waiting& w : queue_) {
    if (free_at.empty()) break;
    const auto j =
        static_cast<size_t>(std::min_element(free_at.begin(), free_at.end()) - free_at.begin());
    free_at[j] += Ms(replicas_[j], w.size);
  }
  std::optional<double> best;
  for (size_t j = 0; j < replicas_.size(); ++j) {
    const double done = free_at[j] + Ms(replicas_[j], size);
    if (!best || done < *best) best = done;
  }
  return best;
}

bool ShouldSpill(std::span<const MainReplica> main, double rt_max_ms) {
  std::vector<double> busy, service;
  busy.reserve(main.size());
  service.reserve(main.size());
  for (const MainReplica& m : main) {
    busy.push_back(WorkAheadMs(m));
    service.push_back(m.batch_ms);
  }
  return optimizer::mark::Spill(busy, service, 0, rt_max_ms);
}

}  // namespace pipescale::routing
