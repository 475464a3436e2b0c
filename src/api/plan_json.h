// Plans as the JSON of `pipescale plan -o json` (and, later, of the CR status), and as the
// human table.
#pragma once

#include <string>

#include "model/plan.h"

namespace pipescale::api {

// {"status", "optimizer", "objective", "solveMs", "tasks": [...], "paths": [...], "notes"};
// Loki's plans add "phase", "accuracy", "servedFraction", "variantPaths", "routing", "backups"
// and per task "loadRps" and "budgetMs".
std::string PlanToJson(const model::Plan& plan);

std::string PlanToTable(const model::Plan& plan);

}  // namespace pipescale::api
