// A plan's one JSON rendering, used by `pipescale plan -o json`, the CR status (status.plan)
// and the routing ConfigMap (its data-plane parts), and the human table of the CLI.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "model/pipeline.h"
#include "model/plan.h"

namespace pipescale::api {

struct PlanJsonOptions {
  // To 4 decimals for fractions, shares, accuracies and coefficients, 2 for milliseconds,
  // rates and dollars: the status and the ConfigMap are then not rewritten for noise.
  bool rounded = false;
  // The solve report's "status", "optimizer", "objective", "objectiveUnit", "solveMs" and
  // "notes" (the CR status keeps them in status.solver instead).
  bool report = true;
};

// {"status", "optimizer", "objective", "objectiveUnit", "solveMs", "costPerHour",
// "servedFraction", "tasks": [{"task", "variant", "hardwareClass", "replicas", "batchSize",
// "latencyMs", "queueMs", "loadRps"}], "paths": [{"name", "sloMs", "predictedLatencyMs"}],
// "notes"}. Loki's plans add "phase", "accuracy", "variantPaths", "routing" and "backups";
// Kairos's and MArk's add "pools", Kairos "upperBoundQps" and MArk "forecast" {stepSeconds,
// rps}.
nlohmann::ordered_json PlanToJsonValue(const model::Plan& plan, const PlanJsonOptions& options);

// The rounding rule of PlanJsonOptions::rounded, for the status's other numbers too.
double RoundFraction(double v);  // 4 decimals
double RoundQuantity(double v);  // 2 decimals

// PlanToJsonValue with the defaults, indented: the CLI's `-o json`.
std::string PlanToJson(const model::Plan& plan);

// The data-plane parts, as PlanToJsonValue renders them.
// Loki's MostAccurateFirst tables: [{"path", "task", "from", "to": [{"variant", "fraction"}]}].
nlohmann::ordered_json RoutingToJson(const model::AccuracyScalingPlan& plan, bool rounded);
// Variants with capacity left: [{"task", "variant", "spareRps"}].
nlohmann::ordered_json BackupsToJson(const model::AccuracyScalingPlan& plan, bool rounded);
// Per task its QoS, members (class, replicas, largest query, Kairos coefficient, capacity),
// the spill class and Kairos's bound.
nlohmann::ordered_json PoolsToJson(const model::PoolPlan& plan, bool rounded);

// A batch the router forms (batchSize.formedBy: router): per task and variant, the plan's batch
// size (of its class with the most replicas) and how long the first request may wait for the
// batch to fill (the plan's queueMs, in whole ms so that noise in the rates does not rewrite it).
struct RouterBatch {
  std::string task, variant;
  int batch_size = 1;
  double wait_ms = 0;
  bool operator==(const RouterBatch&) const = default;
};
std::vector<RouterBatch> RouterBatches(const model::Pipeline& pipeline, const model::Plan& plan);
// [{"task", "variant", "batchSize", "waitMs"}].
nlohmann::ordered_json BatchesToJson(const std::vector<RouterBatch>& batches);

std::string PlanToTable(const model::Plan& plan);

}  // namespace pipescale::api
