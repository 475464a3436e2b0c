#include "sim/kairos_sim.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>

#include "common/check.h"

namespace pipescale::sim {

using optimizer::kairos::Dispatch;
using optimizer::kairos::HeterogeneityCoefficient;
using optimizer::kairos::Instance;
using optimizer::kairos::Query;

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

  struct Waiting {
    double arrived;
    int batch;
  };
  std::vector<Waiting> queue;
  const size_t cap = 2 * pool.size();
  std::vector<double> latencies;
  latencies.reserve(options.queries);
  int dropped = 0;
  double next_arrival = gap(rng);
  int arrived = 0;

  auto dispatch = [&](double now) {
    std::vector<int> idle;
    for (size_t j = 0; j < pool.size(); ++j) {
      if (pool[j].busy_ms <= now) idle.push_back(static_cast<int>(j));
    }
    if (idle.empty() || queue.empty()) return;
    std::vector<std::pair<size_t, int>> pairs;  // (queue index, instance)
    if (policy == Policy::kFcfs) {
      for (size_t i = 0; i < queue.size() && i < idle.size(); ++i) pairs.emplace_back(i, idle[i]);
    } else {
      // Every instance takes part, busy ones through their remaining time; only the pairs
      // with an idle instance are dispatched now.
      std::vector<Query> queries;
      queries.reserve(queue.size());
      for (const Waiting& w : queue) queries.push_back({w.batch, now - w.arrived});
      std::vector<Instance> all;
      all.reserve(pool.size());
      for (const Instance& in : pool) {
        all.push_back({in.hardware_class, std::max(0.0, in.busy_ms - now)});
      }
      const std::vector<int> match =
          Dispatch(queries, all, latency_ms, coefficient, qos_ms, options.xi);
      for (size_t i = 0; i < match.size(); ++i) {
        if (match[i] >= 0 && pool[match[i]].busy_ms <= now) pairs.emplace_back(i, match[i]);
      }
    }
    std::vector<char> taken(queue.size(), false);
    for (const auto& [i, j] : pairs) {
      const double done = now + latency_ms[pool[j].hardware_class](queue[i].batch);
      pool[j].busy_ms = done;
      latencies.push_back(done - queue[i].arrived);
      taken[i] = true;
    }
    std::vector<Waiting> rest;
    for (size_t i = 0; i < queue.size(); ++i) {
      if (!taken[i]) rest.push_back(queue[i]);
    }
    queue = std::move(rest);
  };

  while (arrived < options.queries || !queue.empty()) {
    double next_done = std::numeric_limits<double>::infinity();
    for (const Instance& in : pool) {
      if (in.busy_ms > 0 &&
          (next_done == std::numeric_limits<double>::infinity() || in.busy_ms < next_done)) {
        next_done = in.busy_ms;
      }
    }
    // Completions already past are not events; only those still ahead of the clock are.
    double now = 0;
    if (arrived < options.queries && next_arrival <= next_done) {
      now = next_arrival;
      ++arrived;
      if (queue.size() >= cap) {
        ++dropped;
      } else {
        queue.push_back({now, mix[size(rng)].first});
      }
      next_arrival = now + gap(rng);
    } else {
      now = next_done;
      for (Instance& in : pool) {
        if (in.busy_ms <= now) in.busy_ms = 0;  // idle from here on
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
