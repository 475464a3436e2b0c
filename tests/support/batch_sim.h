// A discrete-event simulation of one task's replicas, written apart from optimizer/tail.h to
// check it: Poisson arrivals (at a rate that may draw anew each second: bursty arrivals); batches
// formed in the router (one queue; out when full or when the first has waited the budget) or in
// each server (out when full, or after the server's own wait); each to the replica that would
// finish it first, filling a forming batch before starting another, as the router's picker does;
// each replica runs one batch at a time, d(rows) long.
#pragma once

#include <cstdint>
#include <functional>

namespace pipescale::testing {

struct BatchSim {
  double rate_rps = 1;
  // Each second's rate drawn from a gamma of mean rate_rps and this coefficient of variation
  // (0: steady): per-second counts of index of dispersion 1 + rate_rps rate_cv^2.
  double rate_cv = 0;
  int replicas = 1;
  int batch = 1;
  std::function<double(int)> exec_ms;  // d(rows)
  bool router_forms = true;
  double wait_ms = 0;  // the router's budget, or the server's own wait
  int requests = 40000;
  std::uint64_t seed = 1;
};

// The p-quantile (0 < p < 1) of the time from arrival to answer, in ms, over the requests after
// the first tenth (the warm-up).
double SimulatedQuantileMs(const BatchSim& sim, double p);

}  // namespace pipescale::testing
