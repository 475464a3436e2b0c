#include "metrics/prometheus.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>

#include "http/client.h"

namespace pipescale::metrics {
namespace {

using nlohmann::json;

// A busy Prometheus answers a pipeline's queries in kilobytes; more than this is a query that
// selects far too much, and reading it whole could exhaust the operator's memory.
constexpr size_t kMaxResponseBytes = size_t{16} << 20;
// Prometheus's answers nest six levels deep; the cap keeps a hostile answer from building a
// deep tree (each level costs an allocation) out of a body within the size limit.
constexpr int kMaxDepth = 32;
// Server bytes quoted in an error: enough to recognise a proxy's page, short enough for a
// status condition.
constexpr size_t kQuoteBytes = 200;

// The length of the valid UTF-8 sequence that starts `s`, or 0 when it is not one.
size_t Utf8Length(std::string_view s) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(0);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // beyond U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n || byte(1) < lo || byte(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(k) < 0x80 || byte(k) > 0xBF) return 0;
  }
  return n;
}

// At most `max` bytes of `s`, with control characters, quotes and invalid UTF-8 escaped: the
// text ends up in a status condition, which must be valid UTF-8 to be written at all, and in
// log lines.
std::string Printable(std::string_view s, size_t max = kQuoteBytes) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = Utf8Length(s.substr(i));
    if (i + std::max<size_t>(n, 1) > max) break;
    if (n > 1) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c >= 0x7F) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  if (i < s.size()) out += "...";
  return out;
}

// `s` in quotes, printable, with its full size when it was cut.
std::string Quote(std::string_view s, size_t max = kQuoteBytes) {
  std::string out = "\"" + Printable(s, max) + "\"";
  if (s.size() > max) out += " (" + std::to_string(s.size()) + " bytes)";
  return out;
}

// What a JSON value is, for an error message; never throws (dump() of a scalar cannot).
std::string Describe(const json* v) {
  if (v == nullptr) return "nothing";
  if (v->is_string()) return Quote(v->get_ref<const std::string&>(), 40);
  if (v->is_object()) return "an object";
  if (v->is_array()) return "an array of " + std::to_string(v->size());
  return v->dump();
}

Error Malformed(const std::string& at, const std::string& want, const json* got) {
  return Error{ErrorKind::kInvalid, "prometheus: malformed response: " + at + ": want " + want +
                                        ", got " + Describe(got)};
}

// The member `key` of an object; nullptr when `j` is not an object or has no such member.
const json* Member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

// --- The transfer ---

using Response = http::Answer;

}  // namespace

std::string RedactUrl(std::string_view url) {
  const size_t scheme = url.find("://");
  const size_t from = scheme == std::string_view::npos ? 0 : scheme + 3;
  const size_t host_end = std::min(url.find_first_of("/?#", from), url.size());
  const size_t at = url.rfind('@', host_end - 1);
  if (at == std::string_view::npos || at < from || host_end == from) return std::string(url);
  const size_t colon = url.find(':', from);
  const size_t keep = colon != std::string_view::npos && colon < at ? colon + 1 : from;
  return std::string(url.substr(0, keep)) + "***" + std::string(url.substr(at));
}

namespace {

// POSTs a form; every HTTP answer is a Response, only a failed transfer is an Error.
Result<Response> Fetch(const std::string& url,
                       const std::vector<std::pair<std::string, std::string>>& form,
                       std::chrono::milliseconds timeout) {
  http::Request request{.method = "POST", .url = url};
  for (const auto& [k, v] : form) {
    request.body += (request.body.empty() ? "" : "&") + k + "=" + http::Escape(v);
  }
  http::Session session;
  auto response =
      session.Perform(request, {.max_body_bytes = kMaxResponseBytes, .timeout = timeout},
                      "prometheus " + Printable(RedactUrl(url)));
  if (!response && response.error().kind == ErrorKind::kInvalid) {
    return Error{ErrorKind::kInvalid, response.error().message + "; the query selects too much"};
  }
  return response;
}

// --- The answer ---

// "HTTP 200, text/html": what the server said it sent.
std::string Context(const Response& r) {
  return "HTTP " + std::to_string(r.status) + ", " +
         (r.content_type.empty() ? "no Content-Type" : Printable(r.content_type, 64));
}

std::string StringMember(const json& j, const char* key, const char* otherwise) {
  const json* v = Member(j, key);
  return v != nullptr && v->is_string() ? Printable(v->get_ref<const std::string&>()) : otherwise;
}

// The `data` member of a success answer; an error answer or anything else as an Error.
Result<json> Data(const Response& r) {
  bool too_deep = false;
  json j = json::parse(
      r.body,
      [&](int depth, json::parse_event_t, json&) {
        if (depth <= kMaxDepth) return true;
        too_deep = true;
        return false;  // dropped, so the tree stays shallow
      },
      /*allow_exceptions=*/false);
  // Not JSON at all: a proxy's error page or a cut transfer, which usually pass.
  if (j.is_discarded()) {
    return Error{ErrorKind::kTransient,
                 "prometheus: response is not JSON (" + Context(r) + "): " + Quote(r.body)};
  }
  if (too_deep) {
    return Error{ErrorKind::kInvalid, "prometheus: response nests deeper than " +
                                          std::to_string(kMaxDepth) + " levels (" + Context(r) +
                                          ")"};
  }
  const json* status = Member(j, "status");
  if (status == nullptr || !status->is_string()) {
    return Error{ErrorKind::kInvalid,
                 "prometheus: response has no \"status\", not Prometheus's API (" + Context(r) +
                     "): " + Quote(r.body)};
  }
  if (*status != "success") {
    const ErrorKind kind =
        r.status == 400 || r.status == 422 ? ErrorKind::kInvalid : ErrorKind::kTransient;
    return Error{kind, "prometheus: " + StringMember(j, "errorType", "error") + ": " +
                           StringMember(j, "error", "unknown error")};
  }
  const json* data = Member(j, "data");
  if (data == nullptr || !data->is_object()) return Malformed("data", "an object", data);
  return std::move(j["data"]);
}

// Prometheus sends sample values as strings ("1.5", "NaN", "+Inf", "-Inf"); some compatible
// backends send JSON numbers. Both are accepted.
Result<double> SampleValue(const json* v, const std::string& at) {
  if (v != nullptr && v->is_number()) return v->get<double>();
  const char* want = "a number or a numeric string";
  if (v == nullptr || !v->is_string()) return Malformed(at, want, v);
  std::string_view s = v->get_ref<const std::string&>();
  // from_chars takes no leading '+', which Prometheus writes for +Inf.
  if (s.size() > 1 && s[0] == '+' && s[1] != '-' && s[1] != '+') s.remove_prefix(1);
  double out = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc{} || end != s.data() + s.size()) return Malformed(at, want, v);
  return out;
}

// A [unix seconds, value] pair.
Result<std::pair<double, double>> Point(const json* p, const std::string& at) {
  if (p == nullptr || !p->is_array() || p->size() != 2) {
    return Malformed(at, "a [time, value] pair", p);
  }
  const json& time = (*p)[0];
  if (!time.is_number()) return Malformed(at + "[0]", "a number (unix seconds)", &time);
  auto value = SampleValue(&(*p)[1], at + "[1]");
  if (!value) return value.error();
  return std::pair{time.get<double>(), *value};
}

// The `metric` member of a vector or matrix item: label names to string values.
Result<std::map<std::string, std::string>> Labels(const json& item, const std::string& at) {
  if (!item.is_object()) return Malformed(at, "an object", &item);
  const json* metric = Member(item, "metric");
  if (metric == nullptr || !metric->is_object()) {
    return Malformed(at + ".metric", "an object", metric);
  }
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : metric->items()) {
    if (!value.is_string())
      return Malformed(at + ".metric." + Printable(name, 64), "a string", &value);
    out[name] = value.get<std::string>();
  }
  return out;
}

// data.result after checking that data.resultType is `want`.
Result<const json*> ResultOf(const json& data, const std::string& want, const char* query_kind) {
  const json* type = Member(data, "resultType");
  if (type == nullptr || !type->is_string()) return Malformed("data.resultType", "a string", type);
  const auto& got = type->get_ref<const std::string&>();
  if (got != want && !(want == "vector" && got == "scalar")) {
    return Error{ErrorKind::kInvalid, "prometheus: " + std::string(query_kind) + " returns a " +
                                          Printable(got, 32) + ", not a " + want};
  }
  const json* result = Member(data, "result");
  if (result == nullptr) return Malformed("data.result", "a value", result);
  return result;
}

Result<std::vector<Sample>> Samples(const json& data) {
  auto result = ResultOf(data, "vector", "query");
  if (!result) return result.error();
  const json& r = **result;
  if (*Member(data, "resultType") == "scalar") {  // one unlabeled sample
    auto point = Point(&r, "data.result");
    if (!point) return point.error();
    return std::vector<Sample>{{{}, point->second}};
  }
  if (!r.is_array()) return Malformed("data.result", "an array", &r);
  std::vector<Sample> out;
  out.reserve(r.size());
  for (size_t i = 0; i < r.size(); ++i) {
    const std::string at = "data.result[" + std::to_string(i) + "]";
    auto labels = Labels(r[i], at);
    if (!labels) return labels.error();
    auto point = Point(Member(r[i], "value"), at + ".value");
    if (!point) return point.error();
    out.push_back({std::move(labels).value(), point->second});
  }
  return out;
}

Result<Series> OneSeries(const json& item, const std::string& at) {
  auto labels = Labels(item, at);
  if (!labels) return labels.error();
  const json* values = Member(item, "values");
  if (values == nullptr || !values->is_array()) {
    return Malformed(at + ".values", "an array", values);
  }
  Series s{std::move(labels).value(), {}};
  s.points.reserve(values->size());
  for (size_t k = 0; k < values->size(); ++k) {
    auto point = Point(&(*values)[k], at + ".values[" + std::to_string(k) + "]");
    if (!point) return point.error();
    s.points.push_back(*point);
  }
  return s;
}

Result<std::vector<Series>> Matrix(const json& data) {
  auto result = ResultOf(data, "matrix", "range query");
  if (!result) return result.error();
  const json& r = **result;
  if (!r.is_array()) return Malformed("data.result", "an array", &r);
  std::vector<Series> out;
  out.reserve(r.size());
  for (size_t i = 0; i < r.size(); ++i) {
    auto series = OneSeries(r[i], "data.result[" + std::to_string(i) + "]");
    if (!series) return series.error();
    out.push_back(std::move(series).value());
  }
  return out;
}

}  // namespace

PrometheusClient::PrometheusClient(std::string base_url, std::chrono::milliseconds timeout)
    : base_url_(std::move(base_url)), timeout_(timeout) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
}

Result<std::vector<Sample>> PrometheusClient::Query(const std::string& promql,
                                                    std::optional<double> at) const {
  std::vector<std::pair<std::string, std::string>> form = {{"query", promql}};
  if (at) form.emplace_back("time", std::to_string(*at));
  auto response = Fetch(base_url_ + "/api/v1/query", form, timeout_);
  if (!response) return response.error();
  auto data = Data(*response);
  if (!data) return data.error();
  return Samples(*data);
}

Result<std::vector<Series>> PrometheusClient::QueryRange(const std::string& promql, double start,
                                                         double end, double step) const {
  auto response = Fetch(base_url_ + "/api/v1/query_range",
                        {{"query", promql},
                         {"start", std::to_string(start)},
                         {"end", std::to_string(end)},
                         {"step", std::to_string(step)}},
                        timeout_);
  if (!response) return response.error();
  auto data = Data(*response);
  if (!data) return data.error();
  return Matrix(*data);
}

}  // namespace pipescale::metrics
