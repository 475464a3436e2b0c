// The Events the operator records about an InferencePipeline (PlanChanged, InvalidSpec,
// Unschedulable, ...), as the core/v1 Event objects it creates.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "api/object_meta.h"

namespace pipescale::api {

// The longest message an Event carries; a longer one is cut.
inline constexpr size_t kMaxEventMessageBytes = 1024;

struct EventRecord {
  std::string type;  // Normal or Warning
  std::string reason;
  std::string message;
  double now = 0;  // unix seconds: its first and last timestamps
};

// An Event about the pipeline `involved` (its name, namespace and uid), in its namespace, named
// by the apiserver after it (generateName "<pipeline>."), from pipescale-operator.
nlohmann::json BuildEvent(const ObjectMeta& involved, const EventRecord& event);

}  // namespace pipescale::api
