// A client for Prometheus's HTTP query API (instant and range queries) over libcurl.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace pipescale::metrics {

struct Sample {
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Series {
  std::map<std::string, std::string> labels;
  std::vector<std::pair<double, double>> points;  // (unix seconds, value)
};

// The value of label `name` of a Sample or a Series, "" when it has none.
template <class T>
std::string LabelOf(const T& s, const char* name) {
  const auto it = s.labels.find(name);
  return it != s.labels.end() ? it->second : "";
}

class PrometheusClient {
 public:
  explicit PrometheusClient(std::string base_url,
                            std::chrono::milliseconds timeout = std::chrono::seconds(5));

  // An instant vector (or scalar, as one unlabeled sample). kInvalid for a query Prometheus
  // rejects (HTTP 400, with its message), a matrix or string result, or an answer of the wrong
  // shape; kTransient when it cannot be reached, times out or answers with something that is
  // not JSON (a proxy's page, a cut body). Never throws: whatever the server sends becomes a
  // short, printable message. Sample values may be JSON strings or numbers.
  Result<std::vector<Sample>> Query(const std::string& promql,
                                    std::optional<double> at_unix_seconds = std::nullopt) const;
  // A range query's matrix, with the same errors as Query.
  Result<std::vector<Series>> QueryRange(const std::string& promql, double start, double end,
                                         double step_seconds) const;

  const std::string& base_url() const { return base_url_; }

 private:
  std::string base_url_;
  std::chrono::milliseconds timeout_;
};

// `url` with the password of its user information hidden (`https://user:***@host/...`; a
// user part without a password, often a token, is hidden whole): the address goes into errors,
// and from there into conditions, events and logs that more people read than the Secret.
std::string RedactUrl(std::string_view url);

}  // namespace pipescale::metrics
