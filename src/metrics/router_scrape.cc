#include "metrics/router_scrape.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <optional>

#include "http/client.h"

namespace pipescale::metrics {
namespace {

// A router's exposition is tens of kilobytes; a page past this is not a router's.
constexpr size_t kMaxExpositionBytes = size_t{4} << 20;
// Read by the door watch every 0.1 s and at every look while a path may sleep, one router after
// another: a router slower than this is left to Prometheus's count, and one that is gone delays
// the watch's sweep by this much.
constexpr std::chrono::milliseconds kTimeout{300};

// The value of label `name` in `labels` (the text between the braces), unescaped; "" without it.
std::string LabelValue(std::string_view labels, std::string_view name) {
  for (size_t at = 0; at < labels.size();) {
    const size_t eq = labels.find("=\"", at);
    if (eq == std::string_view::npos) return "";
    std::string_view key = labels.substr(at, eq - at);
    while (!key.empty() && (key.front() == ',' || key.front() == ' ')) key.remove_prefix(1);
    std::string value;
    size_t i = eq + 2;
    for (; i < labels.size() && labels[i] != '"'; ++i) {
      if (labels[i] == '\\' && i + 1 < labels.size()) ++i;
      value += labels[i];
    }
    if (key == name) return value;
    at = i + 1;
  }
  return "";
}

// `line`'s value when it is a sample of kDoorWaitingMetric, with its path in `path`.
std::optional<double> Sample(std::string_view line, std::string& path) {
  if (!line.starts_with(kDoorWaitingMetric)) return std::nullopt;
  line.remove_prefix(kDoorWaitingMetric.size());
  path.clear();
  if (line.starts_with('{')) {
    const size_t close = line.rfind('}');
    if (close == std::string_view::npos) return std::nullopt;
    path = LabelValue(line.substr(1, close - 1), "path");
    line.remove_prefix(close + 1);
  }
  if (!line.starts_with(' ')) return std::nullopt;
  while (line.starts_with(' ')) line.remove_prefix(1);
  const std::string_view number = line.substr(0, line.find(' '));
  double value = 0;
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (error != std::errc() || end != number.data() + number.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::map<std::string, double> DoorWaitingIn(std::string_view exposition) {
  std::map<std::string, double> out;
  std::string path;
  while (!exposition.empty()) {
    const size_t end = exposition.find('\n');
    const std::string_view line = exposition.substr(0, end);
    exposition.remove_prefix(end == std::string_view::npos ? exposition.size() : end + 1);
    if (const std::optional<double> value = Sample(line, path)) out[path] += *value;
  }
  return out;
}

Result<std::map<std::string, double>> ReadDoorWaiting(const std::vector<std::string>& urls) {
  std::map<std::string, double> out;
  std::string failed = "no router to read";
  bool answered = false;
  http::Session session;
  for (const std::string& url : urls) {
    const auto reply = session.Perform(
        {.url = url},
        {.max_body_bytes = kMaxExpositionBytes, .timeout = kTimeout, .connect_timeout = kTimeout},
        "router metrics at " + url);
    if (!reply.ok() || reply->status != 200) {
      failed = reply.ok() ? "router metrics at " + url + ": HTTP " + std::to_string(reply->status)
                          : reply.error().message;
      continue;
    }
    answered = true;
    for (const auto& [path, n] : DoorWaitingIn(reply->body)) out[path] += n;
  }
  if (!answered) return Error{ErrorKind::kTransient, failed};
  return out;
}

}  // namespace pipescale::metrics
