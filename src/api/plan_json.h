// Plans as the JSON of `pipescale plan -o json` (and, later, of the CR status), and as the
// human table.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "model/plan.h"

namespace pipescale::api {

// {"status", "optimizer", "objective", "solveMs", "tasks": [...], "paths": [...], "notes"};
// Loki's plans add "phase", "accuracy", "servedFraction", "variantPaths", "routing", "backups"
// and per task "loadRps" and "budgetMs". Kairos and MArk add "costPerHour", "servedFraction",
// "pools", Kairos "upperBoundQps" and MArk "forecast" {stepSeconds, rps}.
std::string PlanToJson(const model::Plan& plan);

// The pools for a dispatcher: per task its QoS, members (class, replicas, largest query,
// Kairos coefficient, capacity), the spill class and Kairos's bound. `rounded`: numbers to 4
// decimals, so that the ConfigMap is not rewritten for noise.
nlohmann::ordered_json PoolsToJson(const model::Plan& plan, bool rounded = false);

// Loki's MostAccurateFirst tables: [{"path", "task", "from", "to": [{"variant", "fraction"}]}].
// `rounded`: fractions to 4 decimals, as PoolsToJson.
nlohmann::ordered_json RoutingToJson(const model::Plan& plan, bool rounded = false);

std::string PlanToTable(const model::Plan& plan);

}  // namespace pipescale::api
