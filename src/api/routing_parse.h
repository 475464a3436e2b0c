// Reading back what a plan handed to the request path (the routing ConfigMap's `routing.json`,
// `pools.json` and `batching.json`, as api::RoutingConfigMapData writes them), for the router. A
// ConfigMap anyone may edit: every field is checked and a bad one named.
#pragma once

#include <string>
#include <string_view>

#include "api/plan_json.h"
#include "common/result.h"
#include "model/plan.h"

namespace pipescale::api {

// Loki's part: phase, MostAccurateFirst tables, backups and drop budgets. kInvalid naming the
// field ("routing.json: tables[1].to[0].fraction: must be a number in [0, 1]").
Result<model::AccuracyScalingPlan> ParseLokiRouting(std::string_view text);

// Kairos's and MArk's part (`pools.json`): which optimizer wrote it and each task's pool.
struct PoolsRouting {
  std::string optimizer;
  model::PoolPlan plan;
};
Result<PoolsRouting> ParsePoolsRouting(std::string_view text);

// The batches the router forms (`batching.json`).
Result<std::vector<RouterBatch>> ParseBatching(std::string_view text);

}  // namespace pipescale::api
