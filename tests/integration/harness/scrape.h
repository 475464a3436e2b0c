// Waiting on what the local Prometheus has scraped rather than on the clock: a test that reads
// counters once its load has ended, or over a window of its own, waits until every series it
// reads has a sample from after the moment that matters. Header-only: its users link
// pipescale::metrics.
#pragma once

#include <chrono>
#include <string>

#include "integration/harness/wait.h"
#include "metrics/prometheus.h"

namespace pipescale::testing {

// Now in Unix seconds, on the clock Prometheus stamps its samples with (this machine's).
inline double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// True once every series `selector` picks has a sample stamped at `unix_seconds` or later: each
// of their targets scraped since then (a scrape is stamped when it starts, so it holds whatever
// was counted before). False if there is none, or not within `timeout`.
inline bool ScrapedSince(const std::string& prometheus_url, const std::string& selector,
                         double unix_seconds,
                         std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const metrics::PrometheusClient prometheus(prometheus_url);
  return Eventually(
      [&] {
        auto oldest = prometheus.Query("min(timestamp(" + selector + "))");
        return oldest.ok() && !oldest->empty() && (*oldest)[0].value >= unix_seconds;
      },
      timeout, std::chrono::milliseconds(200));
}

}  // namespace pipescale::testing
