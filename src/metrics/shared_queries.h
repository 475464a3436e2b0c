// The default queries asked once for every pipeline: an all-pipelines query is sent at most once
// per max_age to each Prometheus, and each pipeline reads its own series from the answer, so
// what Prometheus is asked stays flat as pipelines are added. Range queries likewise.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
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
  // asking for the same query at once wait for one answer. `max_age`, when given, replaces
  // max_age for this query. Thread-safe.
  Result<std::vector<Sample>> Read(const PrometheusClient& prometheus, const std::string& query,
                                   const std::string& namespace_name, const std::string& name,
                                   std::optional<std::chrono::milliseconds> max_age = {});

  // The same for a range query over [start, end] every `step` seconds: pipelines that ask for
  // the same range (a leader rebuilding every pipeline's memory, on a grid of the interval)
  // share one answer.
  Result<std::vector<Series>> ReadRange(const PrometheusClient& prometheus,
                                        const std::string& query, double start, double end,
                                        double step, const std::string& namespace_name,
                                        const std::string& name);

  long queries_sent() const { return sent_.load(); }

 private:
  using Pipeline = std::pair<std::string, std::string>;  // (namespace, name)
  template <class T>
  struct Answer {
    std::mutex fetching;  // held while one caller asks; the others wait for its answer
    std::chrono::steady_clock::time_point at;
    std::string range;  // what a range query's answer is for: its start and end
    std::shared_ptr<const Result<std::map<Pipeline, std::vector<T>>>> series;
  };
  // By URL and query (and a range's step and span): one answer each, so the maps stay as small
  // as the set of queries, however many ranges are asked over time.
  template <class T>
  using Answers = std::map<std::string, std::shared_ptr<Answer<T>>>;

  // The answer kept under `key`, from `ask` when none for `range` is younger than max_age;
  // `namespace_name` / `name`'s part of it.
  template <class T, class Ask>
  Result<std::vector<T>> Shared(Answers<T>& answers, const std::string& key,
                                const std::string& range, const Ask& ask,
                                const std::string& namespace_name, const std::string& name,
                                std::chrono::milliseconds max_age);

  const std::chrono::milliseconds max_age_;
  std::mutex mu_;  // guards the maps, not the answers
  Answers<Sample> instant_;
  Answers<Series> ranges_;
  std::atomic<long> sent_{0};
};

}  // namespace pipescale::metrics
