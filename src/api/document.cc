#include "api/document.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <regex>
#include <string>

namespace pipescale::api {
namespace {

nlohmann::json ScalarToJson(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return s;  // quoted: always a string
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  static const std::regex kInt("[-+]?[0-9]+");
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (std::regex_match(s, kInt)) {
    long value = 0;
    const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
    auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), value);
    if (ec == std::errc() && ptr == s.data() + s.size()) return value;
  }
  if (std::regex_match(s, kFloat)) return std::stod(s);
  return s;
}

nlohmann::json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return ScalarToJson(node);
    case YAML::NodeType::Sequence: {
      nlohmann::json array = nlohmann::json::array();
      for (const auto& item : node) array.push_back(YamlToJson(item));
      return array;
    }
    case YAML::NodeType::Map: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& kv : node) object[kv.first.as<std::string>()] = YamlToJson(kv.second);
      return object;
    }
  }
  return nullptr;
}

}  // namespace

Result<nlohmann::json> ParseDocument(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return Error{ErrorKind::kInvalid, "the document is empty"};
  if (text[first] == '{' || text[first] == '[') {
    try {
      return nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      return Error{ErrorKind::kInvalid, std::string("invalid JSON: ") + e.what()};
    }
  }
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    return YamlToJson(root);
  } catch (const YAML::Exception& e) {
    return Error{ErrorKind::kInvalid, "invalid YAML: line " + std::to_string(e.mark.line + 1) +
                                          ", column " + std::to_string(e.mark.column + 1) + ": " +
                                          e.msg};
  }
}

}  // namespace pipescale::api
