// The InferencePipeline's status (model/status.h) and its one JSON form: one writer, for what the
// operator writes, and one lenient reader, for whatever a person or an older operator left there.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "model/status.h"

namespace pipescale::api {

// The status as the operator writes it (the CRD's status schema): observedGeneration,
// conditions, plan (PlanToJsonValue rounded and without the solve report, each task with its
// "deployment"), solver, totalReplicas, costPerHour, observed, capacity, unschedulable (left
// out when empty) and memory. Rates, costs, shares and accuracies are rounded as
// PlanJsonOptions::rounded rounds the plan's, so that noise in them does not rewrite the status.
nlohmann::json StatusToJson(const model::PipelineStatus& status);

// status.conditions alone, as StatusToJson writes them.
nlohmann::json ConditionsToJson(const std::vector<model::Condition>& conditions);

// Reads a status back. Anything may be in it: a field of the wrong type, out of range or unknown
// is dropped (a condition without its type or status goes whole, and so does an adopted query
// mix with anything wrong in it) and the rest kept. What was dropped goes, "<path>: <why>" each,
// to `dropped` when given, else to one warning log line naming `pipeline`. Never throws.
// ReadStatus(StatusToJson(s)) == s for every status s the writer can render exactly: numbers at the
// status's precision (as rounded above), a plan without a solve report or router batch waits,
// Loki's drop budgets only for the plan's tasks.
model::PipelineStatus ReadStatus(const nlohmann::json& status, std::string_view pipeline = "",
                                 std::vector<std::string>* dropped = nullptr);

// status.conditions alone, read as ReadStatus reads them (without a log line).
std::vector<model::Condition> ReadConditions(const nlohmann::json& conditions);

}  // namespace pipescale::api
