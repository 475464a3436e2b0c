// What happened in a namespace, for a failed cluster test's message: its events in the order the
// apiserver last saw them, one line each (object, reason, message), so that a failure seen once in
// CI says which writes and rollouts came before it. Header-only: its users link pipescale::kube.
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/json_fields.h"
#include "kube/client.h"

namespace pipescale::testing {

inline std::string EventsOf(const kube::Client& client, const std::string& ns) {
  auto list = client.Get("/api/v1/namespaces/" + ns + "/events");
  if (!list.ok()) return "(events unreadable: " + list.error().message + ")\n";
  std::vector<nlohmann::json> events;
  for (const auto& e : list->value("items", nlohmann::json::array())) events.push_back(e);
  const auto when = [](const nlohmann::json& e) {
    // Null where the scheduler wrote the event: read as absent.
    const std::string last = StringField(e, "lastTimestamp");
    return last.empty() ? StringField(e, "eventTime") : last;
  };
  std::ranges::stable_sort(events, {}, when);
  std::string out;
  for (const auto& e : events) {
    const nlohmann::json& about = Member(e, "involvedObject");
    out += when(e) + " " + StringField(about, "kind") + "/" + StringField(about, "name") + " " +
           StringField(e, "reason") + ": " + StringField(e, "message") + "\n";
  }
  return out;
}

}  // namespace pipescale::testing
