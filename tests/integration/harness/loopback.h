// Our processes on loopback addresses without a cluster (the router's integration test and the
// data-plane benches): emulated model servers and the router, each writing its port file and its
// log into a scratch directory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "integration/harness/process.h"

namespace pipescale::testing {

// What a call to an emulated model server on this machine adds to the d(b) it serves: the HTTP
// round trip and the server's timer overshoot, 1-3 ms on a loaded 2-core machine (5 ms once in
// CI). A test that measures d(b) through such calls allows this much above it, never below.
inline constexpr double kCallOverheadMs = 3;

// The mean of n calls less the slowest, from the mean and the maximum a profile reports: one
// stall of a loaded machine (CI: a 72 ms call among forty of 37 ms) moves the mean of a few
// dozen calls past any bound on the model's d(b); a profile off by a factor moves this too.
inline double MeanWithoutSlowest(double mean_ms, double max_ms, int n) {
  return n > 1 ? (mean_ms * n - max_ms) / (n - 1) : mean_ms;
}

struct ModelServerOptions {
  std::string task;
  std::string latency_ms;         // "A,B,C": A n^2 + B n + C milliseconds for a batch of n rows
  int batch = 1;                  // the largest batch it forms (its MAX_BATCH_SIZE)
  int max_wait_ms = 1000;         // how long it waits for a batch to fill
  std::vector<std::string> more;  // further flags
};

struct Started {
  std::unique_ptr<Process> process;
  std::vector<int> ports;  // as written to its port file; empty when it did not come up in 10 s
};

// A model server alone on loopback address `host` (say 127.0.7.1). Sets MAX_BATCH_SIZE in this
// process's environment, which the server inherits.
Started StartModelServer(const ModelServerOptions& options, const std::string& host,
                         const std::string& dir);

// The router for `pipeline_file` over `endpoints` (its --endpoints syntax) on ports of its own
// choosing: ports[0] serves requests, ports[1] its metrics. `more` adds flags.
Started StartRouter(const std::string& pipeline_file, const std::string& endpoints,
                    const std::vector<std::string>& more, const std::string& dir);

}  // namespace pipescale::testing
