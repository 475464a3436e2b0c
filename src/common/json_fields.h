// Reading fields of JSON from outside (objects read back from the cluster, answers of other
// processes): anyone may have put anything there, so a field of the wrong type reads as absent
// instead of throwing.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace pipescale {

inline int IntField(const nlohmann::json& object, const char* key, int absent) {
  if (!object.is_object()) return absent;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return absent;
  const auto v = it->get<std::int64_t>();
  return v < INT32_MIN || v > INT32_MAX ? absent : static_cast<int>(v);
}

// The member `key` of `object`; an empty object when it is absent or null, or `object` is not
// one, so a path of these reads through a missing level.
inline const nlohmann::json& Member(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNone = nlohmann::json::object();
  if (!object.is_object()) return kNone;
  auto it = object.find(key);
  return it != object.end() && !it->is_null() ? *it : kNone;
}

inline std::string StringField(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace pipescale
