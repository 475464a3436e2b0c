#include "sim/kairos_sim.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>

#include "common/check.h"
#include "routing/pools.h"

namespace pipescale::sim {

using optimizer::kairos::HeterogeneityCoefficient;
using optimizer::kairos::Instance;

SimResult Simulate(const std::vector<std::function<double(int)>>& latency_ms,
                   const std::vector<int>& counts, const BatchMix& mix, double qps, double qos_ms,
                   Policy policy, const SimOptions& options) {
  PIPESCALE_CHECK(latency_ms.size() == counts.size() && qps > 0 && !mix.empty());
  std::vector<Instance> pool;  // busy_ms holds the time it is busy until
  for (size_t c = 0; c < counts.size(); ++c) {
    for (int k = 0; k < counts[c]; ++k) pool.push_back({static_cast<int>(c), 0});
  }
  PIPESCALE_CHECK(!pool.empty());
  // Kairos's coefficients: the largest query on the fastest class over its time on each.
  const int largest = mix.back().first;
  double fastest = std::numeric_limits<double>::infinity();
  for (const auto& ms : latency_ms) fastest = std::min(fastest, ms(largest));
  std::vector<double> coefficient;
  coefficient.reserve(latency_ms.size());
  for (const auto& ms : latency_ms)
    coefficient.push_back(HeterogeneityCoefficient(fastest, ms(largest)));

  std::mt19937 rng(options.seed);
  std::exponential_distribution<double> gap(qps / 1000);
  std::vector<double> weights;
  for (const auto& [b, p] : mix) weights.push_back(p);
  std::discrete_distribution<size_t> size(weights.begin(), weights.end());

  // The router's queue, with each query taking exactly its predicted time.
  routing::KairosQueue queue({.latency_ms = latency_ms,
                              .coefficient = coefficient,
                              .qos_ms = qos_ms,
                              .xi = options.xi,
                              .queue_per_replica = 2,
                              .fcfs = policy == Policy::kFcfs});
  std::vector<routing::PoolReplica> replicas;
  for (size_t j = 0; j < pool.size(); ++j) {
    replicas.push_back({static_cast<int>(j), pool[j].hardware_class});
  }
  queue.SetReplicas(replicas);
  std::vector<double> arrived_at, latencies;  // by query
  std::vector<int> size_of;
  latencies.reserve(options.queries);
  int dropped = 0;
  double next_arrival = gap(rng);
  int arrived = 0;

  auto dispatch = [&](double now) {
    for (const routing::KairosQueue::Start& s : queue.Match(now)) {
      const double done = now + latency_ms[pool[s.replica].hardware_class](size_of[s.query]);
      pool[s.replica].busy_ms = done;
      latencies.push_back(done - arrived_at[s.query]);
    }
  };

  while (arrived < options.queries || queue.waiting() > 0) {
    double next_done = std::numeric_limits<double>::infinity();
    for (const Instance& in : pool) {
      if (in.busy_ms > 0) next_done = std::min(next_done, in.busy_ms);
    }
    double now = 0;
    if (arrived < options.queries && next_arrival <= next_done) {
      now = next_arrival;
      arrived_at.push_back(now);
      size_of.push_back(mix[size(rng)].first);
      if (!queue.Arrive(arrived++, size_of.back(), now)) ++dropped;
      next_arrival = now + gap(rng);
    } else {
      now = next_done;
      for (size_t j = 0; j < pool.size(); ++j) {
        if (pool[j].busy_ms > 0 && pool[j].busy_ms <= now) {
          pool[j].busy_ms = 0;  // idle from here on
          queue.Complete(static_cast<int>(j));
        }
      }
    }
    dispatch(now);
  }

  SimResult out;
  const size_t total = latencies.size() + dropped;
  out.dropped = total > 0 ? static_cast<double>(dropped) / total : 0;
  for (double l : latencies) out.mean_ms += l / std::max<size_t>(1, latencies.size());
  const size_t rank = static_cast<size_t>(std::ceil(0.99 * total)) - 1;
  if (rank >= latencies.size()) {
    out.p99_ms = std::numeric_limits<double>::infinity();  // the drops are in the top 1%
  } else {
    std::nth_element(latencies.begin(), latencies.begin() + static_cast<std::ptrdiff_t>(rank),
                     latencies.end());
    out.p99_ms = latencies[rank];
  }
  return out;
}

double AllowableQps(const std::vector<std::function<double(int)>>& latency_ms,
                    const std::vector<int>& counts, const BatchMix& mix, double qos_ms,
                    Policy policy, double max_qps, const SimOptions& options) {
  double lo = 0, hi = max_qps;
  while (hi - lo > 0.01 * hi) {
    const double mid = (lo + hi) / 2;
    const bool ok =
        Simulate(latency_ms, counts, mix, mid, qos_ms, policy, options).p99_ms <= qos_ms;
    (ok ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace pipescale::sim
