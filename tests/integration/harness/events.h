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

inline std::string EventsOf(const kube::Client& client, const std::string& ns) {
  auto list = client.Get("/api/v1/namespaces/" + ns + "/events");
  if (!list.ok()) return "(events unreadable: " + list.error().message + ")\n";
  std::vector<nlohmann::json> events;
  for (const auto& e : list->value("items", nlohmann::json::array())) events.push_back(e);
  const auto when = [](const nlohmann::json& e) {
    const std::string last = e.value("lastTimestamp", std::string());
    return last.empty() ? e.value("eventTime", std::string()) : last;
  };
  std::ranges::stable_sort(events, {}, when);
  std::string out;
  for (const auto& e : events) {
    const nlohmann::json& about = e.value("involvedObject", nlohmann::json::object());
    out += when(e) + " " + about.value("kind", "") + "/" + about.value("name", "") + " " +
           e.value("reason", "") + ": " + e.value("message", "") + "\n";
  }
  return out;
}

}  // namespace pipescale::testing
