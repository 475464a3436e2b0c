// Simulated serving, to evaluate plans where no cluster runs them: a Kairos pool (Sec. 6's
// setup) under its matcher or first come first served, for Kairos+'s online evaluation and
// the benchmarks. Deterministic for a seed; kept out of the optimizer, which draws no numbers.
#pragma once

#include <functional>
#include <vector>

#include "optimizer/kairos.h"

namespace pipescale::sim {

using optimizer::kairos::BatchMix;

// How waiting queries reach idle instances: Kairos's matching (Dispatch) at every arrival and
// completion, or first come first served to the first idle instance in pool order.
enum class Policy { kKairos, kFcfs };

struct SimOptions {
  int queries = 10000;
  unsigned seed = 1;
  double xi = 0.98;
};

struct SimResult {
  double p99_ms = 0;   // over all queries; a query dropped at the full queue counts late
  double dropped = 0;  // share dropped because the queue (2 per instance) was full
  double mean_ms = 0;  // of the served queries
};

// One pool (`counts` instances per class, latency by class and query size) serving Poisson
// arrivals at `qps` with sizes drawn from `mix`. Each instance runs one query at a time; the
// queue holds at most two queries per instance. Deterministic for a seed.
SimResult Simulate(const std::vector<std::function<double(int)>>& latency_ms,
                   const std::vector<int>& counts, const BatchMix& mix, double qps, double qos_ms,
                   Policy policy, const SimOptions& options = {});

// The largest rate whose p99 stays within QoS (bisection to 1% between 0 and `max_qps`).
double AllowableQps(const std::vector<std::function<double(int)>>& latency_ms,
                    const std::vector<int>& counts, const BatchMix& mix, double qos_ms,
                    Policy policy, double max_qps, const SimOptions& options = {});

}  // namespace pipescale::sim
