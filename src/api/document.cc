#include "api/document.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "api/pipeline_parse.h"
#include "common/strings.h"

namespace pipescale::api {
namespace {

// How much of a parser's own message to repeat: it may quote the input.
constexpr size_t kQuotedMessage = 200;

Error Invalid(std::string message) { return Error{ErrorKind::kInvalid, std::move(message)}; }

Error TooDeep() {
  return Invalid("the document nests deeper than " + std::to_string(limits::kMaxDepth) + " levels");
}

// Deepest nesting of [ and { outside strings, stopping early past `limit`. nlohmann parses
// without recursion, but copying, comparing and dumping a json recurse, so nothing deeper may
// be built at all.
int JsonDepth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size() && deepest <= limit; ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

Result<nlohmann::json> ParseJson(std::string_view text) {
  if (JsonDepth(text, limits::kMaxDepth) > limits::kMaxDepth) return TooDeep();
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for 1e400
    return Invalid("invalid JSON: " + EscapeUserText(e.what(), kQuotedMessage));
  }
}

bool IsDigits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// [-+]?[0-9]+
bool IsInteger(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return IsDigits(s);
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, scanned by hand: std::regex recurses
// once per character and overflows the stack on a long digit string.
bool IsFloat(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  const size_t e = s.find_first_of("eE");
  const std::string_view mantissa = s.substr(0, e);
  if (e != std::string_view::npos && !IsInteger(s.substr(e + 1))) return false;
  const size_t dot = mantissa.find('.');
  if (dot == std::string_view::npos) return IsDigits(mantissa);
  const std::string_view whole = mantissa.substr(0, dot);
  const std::string_view fraction = mantissa.substr(dot + 1);
  if (whole.empty()) return IsDigits(fraction);
  return IsDigits(whole) && (fraction.empty() || IsDigits(fraction));
}

// An integer at its full width: int64, else uint64, else (like JSON parsers) a float.
nlohmann::json IntegerToJson(std::string_view s) {
  const std::string_view digits = s[0] == '+' ? s.substr(1) : s;
  const char* end = digits.data() + digits.size();
  std::int64_t value = 0;
  if (auto [ptr, ec] = std::from_chars(digits.data(), end, value); ec == std::errc()) {
    return value;
  }
  std::uint64_t unsigned_value = 0;
  if (auto [ptr, ec] = std::from_chars(digits.data(), end, unsigned_value); ec == std::errc()) {
    return unsigned_value;
  }
  // Beyond 64 bits: the nearest double, as JSON parsers do; integer fields refuse it.
  return std::strtod(std::string(s).c_str(), nullptr);
}

// A float; one beyond the double range overflows to an infinity (which the reader rejects),
// one below it to a subnormal or zero, as strtod does.
nlohmann::json FloatToJson(std::string_view s) {
  const std::string_view text = s[0] == '+' ? s.substr(1) : s;
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc()) return value;
  return std::strtod(std::string(s).c_str(), nullptr);
}

nlohmann::json ScalarToJson(const YAML::Node& node) {
  const std::string& s = node.Scalar();  // valid UTF-8: the converter checked
  if (node.Tag() == "!") return s;       // quoted: always a string
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (IsInteger(s)) return IntegerToJson(s);
  if (IsFloat(s)) return FloatToJson(s);
  return s;
}

// YAML to JSON within the document limits: the depth is checked before each level recurses,
// and every value counts, so that aliases (which yaml-cpp shares, and this expands) cannot
// multiply a small document into a huge one.
class YamlConverter {
 public:
  Result<nlohmann::json> Convert(const YAML::Node& root) {
    nlohmann::json out = Value(root, 1);
    if (error_) return *error_;
    return out;
  }

 private:
  nlohmann::json Value(const YAML::Node& node, int depth) {
    if (error_) return nullptr;
    if (++values_ > limits::kMaxValues) {
      error_ = Invalid("the document holds more than " + std::to_string(limits::kMaxValues) +
                       " values once YAML aliases are expanded");
      return nullptr;
    }
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return nullptr;
      case YAML::NodeType::Scalar:
        // JSON strings are UTF-8, and nlohmann refuses to write out any other bytes later.
        if (!IsValidUtf8(node.Scalar())) {
          error_ = NotUtf8(node);
          return nullptr;
        }
        return ScalarToJson(node);
      case YAML::NodeType::Sequence:
      case YAML::NodeType::Map:
        if (depth > limits::kMaxDepth) {
          error_ = TooDeep();
          return nullptr;
        }
        return node.IsSequence() ? Sequence(node, depth) : Map(node, depth);
    }
    return nullptr;
  }

  nlohmann::json Sequence(const YAML::Node& node, int depth) {
    nlohmann::json array = nlohmann::json::array();
    for (const auto& item : node) {
      array.push_back(Value(item, depth + 1));
      if (error_) break;
    }
    return array;
  }

  nlohmann::json Map(const YAML::Node& node, int depth) {
    nlohmann::json object = nlohmann::json::object();
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) {
        error_ = Invalid("invalid YAML: line " + std::to_string(kv.first.Mark().line + 1) +
                         ": a key must be a plain value, not a list or a map");
        break;
      }
      if (!IsValidUtf8(kv.first.Scalar())) {
        error_ = NotUtf8(kv.first);
        break;
      }
      object[kv.first.Scalar()] = Value(kv.second, depth + 1);
      if (error_) break;
    }
    return object;
  }

  static Error NotUtf8(const YAML::Node& node) {
    return Invalid("invalid YAML: line " + std::to_string(node.Mark().line + 1) + ": " +
                   QuoteUserText(node.Scalar()) + " is not valid UTF-8");
  }

  std::optional<Error> error_;
  size_t values_ = 0;
};

Result<nlohmann::json> ParseYaml(std::string_view text) {
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    return YamlConverter().Convert(root);
  } catch (const YAML::DeepRecursion&) {
    return TooDeep();
  } catch (const YAML::Exception& e) {
    return Invalid("invalid YAML: line " + std::to_string(e.mark.line + 1) + ", column " +
                   std::to_string(e.mark.column + 1) + ": " +
                   EscapeUserText(e.msg, kQuotedMessage));
  }
}

}  // namespace

Result<nlohmann::json> ParseDocument(std::string_view text) {
  if (text.size() > limits::kMaxDocumentBytes) {
    return Invalid("the document is " + std::to_string(text.size()) + " bytes; at most " +
                   std::to_string(limits::kMaxDocumentBytes) + " are read");
  }
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return Invalid("the document is empty");
  try {
    return text[first] == '{' || text[first] == '[' ? ParseJson(text) : ParseYaml(text);
  } catch (const std::exception& e) {  // bad_alloc and anything else a parser throws
    return Invalid("the document cannot be read: " + EscapeUserText(e.what(), kQuotedMessage));
  }
}

}  // namespace pipescale::api
