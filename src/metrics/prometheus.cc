#include "metrics/prometheus.h"

#include <curl/curl.h>

#include <cmath>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

namespace pipescale::metrics {
namespace {

size_t Append(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

std::string Escape(CURL* curl, const std::string& s) {
  char* e = curl_easy_escape(curl, s.c_str(), static_cast<int>(s.size()));
  std::string out(e);
  curl_free(e);
  return out;
}

// POSTs a form to the query API and returns the `data` member of a success response.
Result<nlohmann::json> Post(const std::string& url,
                            const std::vector<std::pair<std::string, std::string>>& form,
                            std::chrono::milliseconds timeout) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  CURL* c = curl.get();
  std::string body;
  for (const auto& [k, v] : form) body += (body.empty() ? "" : "&") + k + "=" + Escape(c, v);
  std::string response;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &response);
  if (const CURLcode rc = curl_easy_perform(c); rc != CURLE_OK) {
    return Error{ErrorKind::kTransient, "prometheus " + url + ": " + curl_easy_strerror(rc)};
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  const auto j = nlohmann::json::parse(response, nullptr, false);
  if (!j.is_object()) {
    return Error{ErrorKind::kTransient,
                 "prometheus " + url + ": HTTP " + std::to_string(status) + ", not JSON"};
  }
  if (j.value("status", "") != "success") {
    const ErrorKind kind =
        status == 400 || status == 422 ? ErrorKind::kInvalid : ErrorKind::kTransient;
    return Error{kind, "prometheus: " + j.value("errorType", "error") + ": " +
                           j.value("error", "unknown error")};
  }
  return j["data"];
}

std::map<std::string, std::string> Labels(const nlohmann::json& metric) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : metric.items()) out[k] = v.get<std::string>();
  return out;
}

// Prometheus sends values as strings ("1.5", "NaN", "+Inf").
double Value(const nlohmann::json& pair) { return std::stod(pair[1].get<std::string>()); }

}  // namespace

PrometheusClient::PrometheusClient(std::string base_url, std::chrono::milliseconds timeout)
    : base_url_(std::move(base_url)), timeout_(timeout) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
}

Result<std::vector<Sample>> PrometheusClient::Query(const std::string& promql,
                                                    std::optional<double> at) const {
  std::vector<std::pair<std::string, std::string>> form = {{"query", promql}};
  if (at) form.emplace_back("time", std::to_string(*at));
  auto data = Post(base_url_ + "/api/v1/query", form, timeout_);
  if (!data) return data.error();
  std::vector<Sample> out;
  const std::string type = (*data).value("resultType", "");
  if (type == "scalar") {
    out.push_back({{}, Value((*data)["result"])});
  } else if (type == "vector") {
    for (const auto& item : (*data)["result"]) {
      out.push_back({Labels(item["metric"]), Value(item["value"])});
    }
  } else {
    return Error{ErrorKind::kInvalid, "prometheus: query returns a " + type + ", not a vector"};
  }
  return out;
}

Result<std::vector<Series>> PrometheusClient::QueryRange(const std::string& promql, double start,
                                                         double end, double step) const {
  auto data = Post(base_url_ + "/api/v1/query_range",
                   {{"query", promql},
                    {"start", std::to_string(start)},
                    {"end", std::to_string(end)},
                    {"step", std::to_string(step)}},
                   timeout_);
  if (!data) return data.error();
  std::vector<Series> out;
  for (const auto& item : (*data)["result"]) {
    Series s{Labels(item["metric"]), {}};
    for (const auto& v : item["values"]) s.points.emplace_back(v[0].get<double>(), Value(v));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace pipescale::metrics
