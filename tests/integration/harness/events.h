// What happened in a namespace, for a failed cluster test's message: its events in the order the
// apiserver last saw them, one line each (object, reason, message), so that a failure seen once in
// CI says which writes and rollouts came before it. Header-only: its users link pipescale::kube.
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kube/client.h"

namespace pipescale::testing {

// A string field, "" where it is absent or null (an event the scheduler wrote has a null
// lastTimestamp, and json::value throws on a null).
inline std::string EventField(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

inline std::string EventsOf(const kube::Client& client, const std::string& ns) {
  auto list = client.Get("/api/v1/namespaces/" + ns + "/events");
  if (!list.ok()) return "(events unreadable: " + list.error().message + ")\n";
  std::vector<nlohmann::json> events;
  for (const auto& e : list->value("items", nlohmann::json::array())) events.push_back(e);
  const auto when = [](const nlohmann::json& e) {
    const std::string last = EventField(e, "lastTimestamp");
    return last.empty() ? EventField(e, "eventTime") : last;
  };
  std::ranges::stable_sort(events, {}, when);
  std::string out;
  for (const auto& e : events) {
    const auto about = e.find("involvedObject");
    const nlohmann::json object =
        about != e.end() && about->is_object() ? *about : nlohmann::json::object();
    out += when(e) + " " + EventField(object, "kind") + "/" + EventField(object, "name") + " " +
           EventField(e, "reason") + ": " + EventField(e, "message") + "\n";
  }
  return out;
}

}  // namespace pipescale::testing
