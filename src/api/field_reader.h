// Reading JSON from outside field by field: typed access that records a FieldError (path and
// reason) for every problem it meets. The one reader of this module: the pipeline's parser
// (strict: any problem refuses the document), the readers of what a plan hands the request path
// (the routing ConfigMap) and of the status (lenient: a bad field is dropped and the rest kept),
// each deciding what a problem costs.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/pipeline_parse.h"

namespace pipescale::api {

// Where a number must lie. Violations below 0 keep the words of a sign rule ("must be > 0"),
// the rest name the bound they break; `words` replaces both, e.g. "in (0, 1]".
struct Range {
  double min = 0;
  double max = 0;
  bool above_min = false;  // min itself is excluded
  const char* words = nullptr;
};

// What breaks `range`, as "must be ..."; "" when `v` lies in it.
std::string RangeProblem(double v, const Range& range);
// User text quoted and escaped for a message.
std::string Quote(std::string_view s);
std::string Join(const std::vector<std::string>& items, const char* sep);
std::string Num(double v);
// A number as the document wrote it: integers at their full width, never wrapped.
std::string Num(const nlohmann::json& v);
// A bound as the limits table writes it: 3600000, not 3.6e+06.
std::string Bound(double v);

// Typed access to a JSON object that records a FieldError for every problem it meets. Reports
// stop at limits::kMaxErrors, so that a hostile document cannot make the report huge.
class Reader {
 public:
  explicit Reader(std::vector<FieldError>& errors) : errors_(errors) {}

  void Fail(std::string path, std::string message);

  // Says how many problems went unreported, as the last error.
  void Finish();

  // Problems met so far, reported or not.
  size_t problems() const { return errors_.size() + dropped_; }

  // A key of the document is user text: paths quote it escaped.
  static std::string At(const std::string& path, std::string_view key);
  static std::string At(const std::string& path, const char* key);
  static std::string At(const std::string& path, size_t index);

  // Unknown keys are errors: a typo such as `sloms` must not silently mean "no SLO".
  void OnlyKnown(const nlohmann::json& object, const std::string& path,
                 std::initializer_list<const char*> known);

  const nlohmann::json* Get(const nlohmann::json& object, const char* key, const std::string& path,
                            bool required);

  const nlohmann::json* Object(const nlohmann::json& object, const char* key,
                               const std::string& path, bool required);

  // A list of at most `max_items`; a longer one is reported and not read at all.
  const nlohmann::json* Array(const nlohmann::json& object, const char* key,
                              const std::string& path, bool required, size_t max_items);

  std::optional<std::string> String(const nlohmann::json& object, const char* key,
                                    const std::string& path, bool required,
                                    size_t max_bytes = limits::kMaxStringBytes);

  std::optional<double> Number(const nlohmann::json& object, const char* key,
                               const std::string& path, bool required, const Range& range);

  // An integer in [min, max], read at its full width: 2^64 - 1 is too large, never -1.
  std::optional<std::int64_t> Integer(const nlohmann::json& object, const char* key,
                                      const std::string& path, bool required, std::int64_t min,
                                      std::int64_t max);

  // The same checks of a value itself, found at `at` (a list's item, a map's value).
  std::optional<std::string> StringValue(const nlohmann::json& v, const std::string& at,
                                         size_t max_bytes = limits::kMaxStringBytes);
  std::optional<double> NumberValue(const nlohmann::json& v, const std::string& at,
                                    const Range& range);
  std::optional<std::int64_t> IntegerValue(const nlohmann::json& v, const std::string& at,
                                           std::int64_t min, std::int64_t max);

  // "10s", "5m", "1h", "250ms", or a number of seconds; positive and at most `max_seconds`.
  std::optional<double> Duration(const nlohmann::json& object, const char* key,
                                 const std::string& path, double max_seconds);

  // Maps of string-like scalars (resource quantities, node selectors).
  std::map<std::string, std::string> StringMap(const nlohmann::json& object, const char* key,
                                               const std::string& path);

 private:
  // "<number><unit>" with unit ms, s, m or h; nullopt for anything else.
  static std::optional<double> ParseDuration(std::string_view s);

  std::vector<FieldError>& errors_;
  size_t dropped_ = 0;
};

}  // namespace pipescale::api
