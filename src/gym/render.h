// The report of `pipescale simulate`, written out for whoever reads it: a table for a person
// comparing policies, JSON for a program (the one JSON rendering of a gym report: nothing else
// writes one), a per-interval CSV for a spreadsheet, and a self-contained SVG plot of the run
// over time. Pure functions of the Report: nothing here runs a simulation or touches a file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gym/report.h"

namespace pipescale::gym {

// Whether a policy is a baseline, i.e. what users run today: hpa, keda, kpa, or fixed:N (any
// name starting with "fixed"), with or without the knobs gym/baseline.h reads after @, : or +.
// Every policy's goodput per dollar is compared to the best of them.
bool IsBaseline(std::string_view policy);

// The baseline with the highest goodput per dollar, or nullptr when no baseline ran or none
// earned any (a ratio against zero says nothing).
const PolicyReport* BestBaseline(const Report& report);

// For a person: a header line (pipeline, trace, simulated seconds, seed); per path a table of
// what the clients saw under each policy; per policy goodput, cost and goodput per dollar with
// its ratio to the best baseline's; per policy the hardware held and the actions taken; then the
// headline. Columns are aligned and fit 100 columns unless names or class counts are unusual.
std::string RenderTable(const Report& report);

// The whole report: {"pipeline", "trace", "seconds", "seed", "bestBaseline" (a policy name or
// null), "policies": [{"policy", "baseline", "paths": {NAME: {"sloMs", "sent", "answered",
// "withinSlo", "codes", "dropped", "meanMs", "p50Ms", "p99Ms", "sloAttainment",
// "admittedSloAttainment"}}, "replicaHours", "cost", "totalCost", "podStarts", "scalingActions",
// "accuracy", "meanReplicas", "goodput", "goodputPerDollar", "vsBestBaseline" (a ratio or null),
// "wallSeconds", "intervals": [{"atS", "offeredRps", "replicas", "p99Ms", "attainment",
// "costPerHour"}]}]}. A path's keys are pipescale-loadgen's, so one script reads both.
nlohmann::json ToJson(const Report& report);

// Pipelines run together on one node file (pipescale simulate with several -f), one Report each
// with the same policies: each pipeline's table, then per policy the totals over the pipelines
// (requests sent, answered within their SLO and its share, the worst path's share, pod starts,
// cost).
std::string RenderTogether(const std::vector<Report>& reports);
// {"pipelines": [ToJson of each], "totals": [{"policy", "sent", "withinSlo", "sloAttainment",
// "worstPathAttainment", "podStarts", "totalCost"}]}.
nlohmann::json TogetherJson(const std::vector<Report>& reports);

// One header line, then one row per (policy, interval) in the report's order: policy, at_s,
// offered_rps, replicas:TASK..., p99_ms:PATH..., attainment:PATH..., cost_per_hour. Task and
// path columns are the union over every row, sorted; a row without one leaves its cell empty.
// Fields are quoted as RFC 4180 says when they hold a comma, a quote or a line break.
std::string RenderCsv(const Report& report);

// An SVG document, four panels over a shared time axis: offered load (req/s); Ready replicas
// (the sum over tasks, one line per policy, or one line per task when one policy ran); p99 per
// path against its SLO (dashed); SLO attainment per interval. Colour tells the policy apart,
// line style the path.
std::string RenderSvg(const Report& report);

}  // namespace pipescale::gym
