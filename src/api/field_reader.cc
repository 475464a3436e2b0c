#include "api/field_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>

#include "common/strings.h"

namespace pipescale::api {

using nlohmann::json;

namespace {

// Numbers below this magnitude are subnormal: they lose precision, and arithmetic on them is
// orders of magnitude slower on common CPUs, so no field takes one.
constexpr double kSmallestMagnitude = 1e-300;

}  // namespace

std::string Quote(std::string_view s) { return QuoteUserText(s); }

std::string Join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

std::string Num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string Num(const json& v) {
  if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  return Num(v.get<double>());
}

std::string Bound(double v) { return StrFormat("%.10g", v); }

std::string RangeProblem(double v, const Range& range) {
  const bool low = range.above_min ? !(v > range.min) : !(v >= range.min);
  if (range.words != nullptr && (low || v > range.max)) {
    return std::string("must be ") + range.words;
  }
  if (low && range.min > 0 && v <= 0) return "must be > 0";
  if (low && range.min == 0) return range.above_min ? "must be > 0" : "must be >= 0";
  if (low) return "must be at least " + Bound(range.min);
  if (v > range.max) return "must be at most " + Bound(range.max);
  if (v != 0 && std::abs(v) < kSmallestMagnitude) {
    return "must be 0 or at least " + Bound(kSmallestMagnitude) + " in magnitude";
  }
  return "";
}

void Reader::Fail(std::string path, std::string message) {
  if (errors_.size() < limits::kMaxErrors) {
    errors_.push_back({std::move(path), std::move(message)});
  } else {
    ++dropped_;
  }
}

void Reader::Finish() {
  if (dropped_ > 0) errors_.push_back({"", std::to_string(dropped_) + " more problems"});
}

std::string Reader::At(const std::string& path, std::string_view key) {
  const std::string k = EscapeUserText(key, kQuotedChars);
  return path.empty() ? k : path + "." + k;
}

std::string Reader::At(const std::string& path, const char* key) {
  return At(path, std::string_view(key));
}

std::string Reader::At(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

void Reader::OnlyKnown(const json& object, const std::string& path,
                       std::initializer_list<const char*> known) {
  for (const auto& item : object.items()) {
    const std::string& key = item.key();
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) {
      std::vector<std::string> names(known.begin(), known.end());
      Fail(At(path, key), "unknown field; known fields: " + Join(names, ", "));
    }
  }
}

const json* Reader::Get(const json& object, const char* key, const std::string& path,
                        bool required) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (required) Fail(At(path, key), "required");
    return nullptr;
  }
  return &*it;
}

const json* Reader::Object(const json& object, const char* key, const std::string& path,
                           bool required) {
  const json* v = Get(object, key, path, required);
  if (v != nullptr && !v->is_object()) {
    Fail(At(path, key), "must be an object");
    return nullptr;
  }
  return v;
}

const json* Reader::Array(const json& object, const char* key, const std::string& path,
                          bool required, size_t max_items) {
  const json* v = Get(object, key, path, required);
  if (v != nullptr && !v->is_array()) {
    Fail(At(path, key), "must be a list");
    return nullptr;
  }
  if (v != nullptr && v->size() > max_items) {
    Fail(At(path, key), "has " + std::to_string(v->size()) + " items; at most " +
                            std::to_string(max_items) + " are allowed");
    return nullptr;
  }
  return v;
}

std::optional<std::string> Reader::String(const json& object, const char* key,
                                          const std::string& path, bool required,
                                          size_t max_bytes) {
  const json* v = Get(object, key, path, required);
  if (v == nullptr) return std::nullopt;
  return StringValue(*v, At(path, key), max_bytes);
}

std::optional<std::string> Reader::StringValue(const json& v, const std::string& at,
                                               size_t max_bytes) {
  if (!v.is_string()) {
    Fail(at, "must be a string");
    return std::nullopt;
  }
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() > max_bytes) {
    Fail(at, Quote(s) + " is " + std::to_string(s.size()) + " bytes long; at most " +
                 std::to_string(max_bytes) + " are allowed");
    return std::nullopt;
  }
  return s;
}

std::optional<double> Reader::Number(const json& object, const char* key, const std::string& path,
                                     bool required, const Range& range) {
  const json* v = Get(object, key, path, required);
  if (v == nullptr) return std::nullopt;
  return NumberValue(*v, At(path, key), range);
}

std::optional<double> Reader::NumberValue(const json& v, const std::string& at,
                                          const Range& range) {
  if (!v.is_number()) {
    Fail(at, "must be a number");
    return std::nullopt;
  }
  const double d = v.get<double>();
  if (!std::isfinite(d)) {
    Fail(at, "must be finite");
    return std::nullopt;
  }
  if (std::string problem = RangeProblem(d, range); !problem.empty()) {
    Fail(at, problem + ", got " + Num(v));
    return std::nullopt;
  }
  return d;
}

std::optional<std::int64_t> Reader::Integer(const json& object, const char* key,
                                            const std::string& path, bool required,
                                            std::int64_t min, std::int64_t max) {
  const json* v = Get(object, key, path, required);
  if (v == nullptr) return std::nullopt;
  return IntegerValue(*v, At(path, key), min, max);
}

std::optional<std::int64_t> Reader::IntegerValue(const json& v, const std::string& at,
                                                 std::int64_t min, std::int64_t max) {
  if (!v.is_number_integer()) {
    Fail(at, "must be an integer" + (v.is_number() ? ", got " + Num(v) : ""));
    return std::nullopt;
  }
  const bool huge =
      v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX);
  const std::int64_t n = huge ? INT64_MAX : v.get<std::int64_t>();
  if (n < min) {
    Fail(at, "must be >= " + std::to_string(min) + ", got " + Num(v));
    return std::nullopt;
  }
  if (huge || n > max) {
    Fail(at, "must be at most " + std::to_string(max) + ", got " + Num(v));
    return std::nullopt;
  }
  return n;
}

std::optional<double> Reader::Duration(const json& object, const char* key, const std::string& path,
                                       double max_seconds) {
  const json* v = Get(object, key, path, false);
  if (v == nullptr) return std::nullopt;
  std::optional<double> seconds;
  if (v->is_number()) {
    seconds = v->get<double>();
  } else if (v->is_string()) {
    seconds = ParseDuration(v->get_ref<const std::string&>());
  }
  if (!seconds) {
    Fail(At(path, key), "must be a duration such as 500ms, 10s, 5m or 1h" +
                            (v->is_string() ? ", got " + Quote(v->get<std::string>()) : ""));
    return std::nullopt;
  }
  if (!(*seconds > 0)) {
    Fail(At(path, key), "must be a positive duration");
    return std::nullopt;
  }
  if (!(*seconds <= max_seconds)) {
    Fail(At(path, key), "must be at most " + Bound(max_seconds) + " s, got " + Num(*seconds));
    return std::nullopt;
  }
  return seconds;
}

std::map<std::string, std::string> Reader::StringMap(const json& object, const char* key,
                                                     const std::string& path) {
  std::map<std::string, std::string> out;
  const json* v = Object(object, key, path, false);
  if (v == nullptr) return out;
  const std::string at = At(path, key);
  if (v->size() > limits::kMaxMapEntries) {
    Fail(at, "has " + std::to_string(v->size()) + " entries; at most " +
                 std::to_string(limits::kMaxMapEntries) + " are allowed");
    return out;
  }
  for (const auto& [k, value] : v->items()) {
    if (k.size() > limits::kMaxStringBytes) {
      Fail(At(at, k), "the key is " + std::to_string(k.size()) + " bytes long; at most " +
                          std::to_string(limits::kMaxStringBytes) + " are allowed");
    } else if (value.is_string()) {
      if (auto s = String(*v, k.c_str(), at, true)) out[k] = *s;
    } else if (value.is_number() && std::isfinite(value.get<double>())) {
      out[k] = value.dump();
    } else {
      Fail(At(at, k), "must be a string or a number");
    }
  }
  return out;
}

std::optional<double> Reader::ParseDuration(std::string_view s) {
  constexpr size_t kLongest = 32;  // longer is no duration anyone means
  size_t digits = 0;
  while (digits < s.size() && (std::isdigit(static_cast<unsigned char>(s[digits])) ||
                               (s[digits] == '.' && digits > 0))) {
    ++digits;
  }
  if (s.size() > kLongest || digits == 0 || s[digits - 1] == '.') return std::nullopt;
  if (std::count(s.begin(), s.begin() + digits, '.') > 1) return std::nullopt;
  const std::string_view unit = s.substr(digits);
  const double scale = unit == "ms"  ? 0.001
                       : unit == "s" ? 1
                       : unit == "m" ? 60
                       : unit == "h" ? 3600
                                     : 0;
  double n = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + digits, n);
  if (scale == 0 || ec != std::errc() || end != s.data() + digits) return std::nullopt;
  return n * scale;
}

}  // namespace pipescale::api
