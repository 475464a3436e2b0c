// Reads a pipeline's load from Prometheus with the PromQL templates of the spec: defaults that
// match what pipescale's model servers and gateway export, overridable per pipeline.
#pragma once

#include <map>
#include <string>

#include "common/result.h"
#include "metrics/prometheus.h"
#include "metrics/shared_queries.h"
#include "model/metrics_snapshot.h"
#include "model/pipeline.h"

namespace pipescale::metrics {

// Template names (keys of spec.metrics) and their defaults. Placeholders: {{pipeline}},
// {{namespace}}, {{path}}, {{task}}.
const std::map<std::string, std::string>& DefaultQueries();

// Substitutes the placeholders.
std::string Render(const std::string& query, const std::map<std::string, std::string>& values);

// A default query grouped by namespace and pipeline (and path), for every pipeline at once.
std::string AllPipelinesQuery(const std::string& name);

// One snapshot: per-path rate and latency, total arrival rate. An empty result is recorded in
// `missing`, never as 0. kTransient when Prometheus cannot be reached, kInvalid when it rejects
// a query (a bad override names itself in the message). With `shared`, the default queries are
// read from its all-pipelines answers (the pipeline's own templates still go as written).
Result<model::MetricsSnapshot> ReadSnapshot(const PrometheusClient& prometheus,
                                            const model::Pipeline& pipeline,
                                            SharedQueries* shared = nullptr);

// Per path, its arrival rate over the routers' last seconds (the recentRate query), as
// ReadSnapshot reads it for a pipeline with a router: what the operator's surge watch compares
// with the status between reconciles. Errors as ReadSnapshot's; no series, no paths.
Result<std::map<std::string, double>> ReadRecentRates(const PrometheusClient& prometheus,
                                                      const model::Pipeline& pipeline,
                                                      SharedQueries* shared = nullptr);

// Per path, its rate at each of the `intervals` steps of the pipeline's interval, on the grid of
// that interval and ending at least one interval before `now` (the snapshot at `now` is the
// next), oldest first; steps without data are left out, a path without any is absent. Errors as
// ReadSnapshot's. With `shared`, the default pathRate is read from one all-pipelines range query
// per grid step, so a leader rebuilding thousands of pipelines asks Prometheus a handful of times.
Result<model::RateHistory> ReadRateHistory(const PrometheusClient& prometheus,
                                           const model::Pipeline& pipeline, int intervals,
                                           double now, SharedQueries* shared = nullptr);

}  // namespace pipescale::metrics
