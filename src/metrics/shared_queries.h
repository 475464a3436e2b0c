// The default queries asked once for every pipeline: an all-pipelines query is sent at most once
// per max_age to each Prometheus, and each pipeline reads its own series from the answer, so
// what Prometheus is asked stays flat as pipelines are added.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "metrics/prometheus.h"

namespace pipescale::metrics {

class SharedQueries {
 public:
  explicit SharedQueries(std::chrono::milliseconds max_age) : max_age_(max_age) {}

  // The series of pipeline `namespace_name`/`name` in the answer to `query`, a query grouped by
  // (namespace, pipeline, ...): sent when no answer younger than max_age is kept. A failure is
  // kept as long, so a Prometheus that is down is asked once, not once per pipeline. Callers
  // asking for the same query at once wait for one answer. Thread-safe.
  Result<std::vector<Sample>> Read(const PrometheusClient& prometheus, const std::string& query,
                                   const std::string& namespace_name, const std::string& name);

  long queries_sent() const { return sent_.load(); }

 private:
  using ByPipeline = std::map<std::pair<std::string, std::string>, std::vector<Sample>>;
  struct Answer {
    std::mutex fetching;  // held while one caller asks; the others wait for its answer
    std::chrono::steady_clock::time_point at;
    std::shared_ptr<const Result<ByPipeline>> series;
  };

  std::shared_ptr<Answer> Slot(const std::string& key);

  const std::chrono::milliseconds max_age_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Answer>> answers_;  // by Prometheus URL and query
  std::atomic<long> sent_{0};
};

}  // namespace pipescale::metrics
