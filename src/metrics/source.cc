#include "metrics/source.h"

#include <cmath>
#include <cstdlib>

#include "optimizer/registry.h"

namespace pipescale::metrics {

const std::map<std::string, std::string>& DefaultQueries() {
  static const std::map<std::string, std::string> kQueries = {
      // The larger of the last 10 s and the last 30 s, as Knative's autoscaler has a panic window
      // beside its stable one: a rise shows within seconds (the stable window alone ramps up over
      // all 30), a fall only as the stable window sees it. The windows need the routers scraped
      // every few seconds (the chart's PodMonitor does); where a window holds fewer than two
      // samples, the last 2 minutes stand in rather than the series reading as missing.
      {"pathRate",
       R"(sum(rate(pipescale_requests_total{namespace="{{namespace}}",pipeline="{{pipeline}}",path="{{path}}"}[10s])) > sum(rate(pipescale_requests_total{namespace="{{namespace}}",pipeline="{{pipeline}}",path="{{path}}"}[30s])) or sum(rate(pipescale_requests_total{namespace="{{namespace}}",pipeline="{{pipeline}}",path="{{path}}"}[30s])) or sum(rate(pipescale_requests_total{namespace="{{namespace}}",pipeline="{{pipeline}}",path="{{path}}"}[2m])))"},
      {"pathLatency",
       R"(1000 * histogram_quantile(0.99, sum by (le) (rate(pipescale_request_duration_seconds_bucket{namespace="{{namespace}}",pipeline="{{pipeline}}",path="{{path}}"}[1m]))))"},
      {"arrivalRate",
       R"(sum(rate(pipescale_requests_total{namespace="{{namespace}}",pipeline="{{pipeline}}"}[30s])) or sum(rate(pipescale_requests_total{namespace="{{namespace}}",pipeline="{{pipeline}}"}[2m])))"},
      // One series per (task, variant) that served requests in the window.
      {"multiplicativeFactor",
       R"(sum by (task, variant) (rate(pipescale_model_emitted_requests_total{namespace="{{namespace}}",pipeline="{{pipeline}}"}[1m])) / sum by (task, variant) (rate(pipescale_model_requests_total{namespace="{{namespace}}",pipeline="{{pipeline}}"}[1m])) > 0)"},
      // The router's data plane, by reason, task or (task, variant), over the last minute.
      {"routerDrops",
       R"(sum by (reason) (rate(pipescale_router_drops_total{namespace="{{namespace}}",pipeline="{{pipeline}}"}[1m])))"},
      {"routerShed",
       R"(sum by (path, reason) (rate(pipescale_router_shed_total{namespace="{{namespace}}",pipeline="{{pipeline}}"}[1m])))"},
      {"routerReroutes",
       R"(sum(rate(pipescale_router_reroutes_total{namespace="{{namespace}}",pipeline="{{pipeline}}"}[1m])))"},
      {"routerSpillShare",
       R"(sum by (task) (rate(pipescale_router_spills_total{namespace="{{namespace}}",pipeline="{{pipeline}}"}[1m])) / sum by (task) (rate(pipescale_router_task_requests_total{namespace="{{namespace}}",pipeline="{{pipeline}}"}[1m])))"},
      {"routerPoolWaiting",
       R"(max by (task) (pipescale_router_pool_waiting_requests{namespace="{{namespace}}",pipeline="{{pipeline}}"}))"},
      {"routerBatchRows",
       R"(sum by (task) (rate(pipescale_router_batch_rows_sum{namespace="{{namespace}}",pipeline="{{pipeline}}"}[1m])) / sum by (task) (rate(pipescale_router_batch_rows_count{namespace="{{namespace}}",pipeline="{{pipeline}}"}[1m])))"},
      {"routerVariantRate",
       R"(sum by (task, variant) (rate(pipescale_router_task_requests_total{namespace="{{namespace}}",pipeline="{{pipeline}}",code="200"}[1m])))"},
      // Batch service times per (task, variant, class, rows) over spec.profiles.window: the
      // time the batches took in all, and how many there were (their mean is d(rows)).
      {"profileSeconds",
       R"(sum by (task, variant, hardware_class, rows) (increase(pipescale_router_batch_service_seconds_sum{namespace="{{namespace}}",pipeline="{{pipeline}}"}[{{window}}])))"},
      {"profileBatches",
       R"(sum by (task, variant, hardware_class, rows) (increase(pipescale_router_batch_service_seconds_count{namespace="{{namespace}}",pipeline="{{pipeline}}"}[{{window}}])))"},
      // Kairos's query-size mix: queries by size bucket over two minutes, every path's.
      {"querySizes",
       R"(sum by (le) (increase(pipescale_router_query_rows_bucket{namespace="{{namespace}}",pipeline="{{pipeline}}"}[2m])))"},
  };
  return kQueries;
}

std::string Render(const std::string& query, const std::map<std::string, std::string>& values) {
  std::string out = query;
  for (const auto& [name, value] : values) {
    const std::string placeholder = "{{" + name + "}}";
    for (size_t at = out.find(placeholder); at != std::string::npos;
         at = out.find(placeholder, at + value.size())) {
      out.replace(at, placeholder.size(), value);
    }
  }
  return out;
}

namespace {

// Batch rows past this are not a batch size any spec may declare (api's kMaxBatch).
constexpr long kMaxBatchRows = 4096;

std::string QueryFor(const model::Pipeline& pipeline, const std::string& name) {
  auto it = pipeline.spec.metrics.queries.find(name);
  return it != pipeline.spec.metrics.queries.end() ? it->second : DefaultQueries().at(name);
}

Error Named(const std::string& name, Error e) {
  e.message = "metrics." + name + ": " + e.message;
  return e;
}

// The single value of a query, or nullopt when the result is empty or not a number.
Result<std::optional<double>> One(const PrometheusClient& prometheus, const std::string& name,
                                  const std::string& query) {
  auto samples = prometheus.Query(query);
  if (!samples) return Named(name, samples.error());
  if (samples->empty() || std::isnan(samples->front().value)) return std::optional<double>{};
  return std::optional<double>{samples->front().value};
}

// A label's value, "" when absent.
std::string Label(const Sample& s, const char* name) {
  const auto it = s.labels.find(name);
  return it != s.labels.end() ? it->second : "";
}

// Each series' value by its `labels` joined with '/', finite values only.
Result<std::map<std::string, double>> ByLabels(const PrometheusClient& prometheus,
                                               const model::Pipeline& pipeline,
                                               const std::string& name,
                                               const std::vector<std::string>& labels) {
  const std::map<std::string, std::string> values = {{"pipeline", pipeline.name},
                                                     {"namespace", pipeline.namespace_name}};
  auto samples = prometheus.Query(Render(QueryFor(pipeline, name), values));
  if (!samples) return Named(name, samples.error());
  std::map<std::string, double> out;
  for (const Sample& s : *samples) {
    std::string key;
    for (size_t i = 0; i < labels.size(); ++i)
      key += (i > 0 ? "/" : "") + Label(s, labels[i].c_str());
    if (std::isfinite(s.value)) out[key] = s.value;
  }
  return out;
}

Result<model::DataPlaneSnapshot> ReadDataPlane(const PrometheusClient& prometheus,
                                               const model::Pipeline& pipeline) {
  model::DataPlaneSnapshot out;
  std::map<std::string, double> reroutes;  // one series, no label
  const struct {
    const char* name;
    std::vector<std::string> labels;
    std::map<std::string, double>* into;
  } reads[] = {{"routerSpillShare", {"task"}, &out.spill_share},
               {"routerPoolWaiting", {"task"}, &out.pool_waiting},
               {"routerBatchRows", {"task"}, &out.batch_rows},
               {"routerDrops", {"reason"}, &out.drops_rps},
               {"routerShed", {"path", "reason"}, &out.shed_rps},
               {"routerReroutes", {}, &reroutes},
               {"routerVariantRate", {"task", "variant"}, &out.variant_rps}};
  for (const auto& r : reads) {
    auto read = ByLabels(prometheus, pipeline, r.name, r.labels);
    if (!read) return read.error();
    *r.into = std::move(*read);
  }
  out.reroutes_rps = reroutes.empty() ? 0 : reroutes.begin()->second;
  return out;
}

// The batch rows a series names, or 0 when its label is not a batch size.
int Rows(const Sample& s) {
  const std::string rows = Label(s, "rows");
  char* end = nullptr;
  const long n = std::strtol(rows.c_str(), &end, 10);
  return rows.empty() || *end != '\0' || n < 1 || n > kMaxBatchRows ? 0 : static_cast<int>(n);
}

// The router's batch times over the profiles' window, from the total seconds and the number of
// batches of each (task, variant, class, rows).
Result<model::BatchTimings> ReadBatchTimings(const PrometheusClient& prometheus,
                                             const model::Pipeline& pipeline) {
  const std::map<std::string, std::string> values = {
      {"pipeline", pipeline.name},
      {"namespace", pipeline.namespace_name},
      {"window", std::to_string(static_cast<long>(pipeline.spec.profiles.window_seconds)) + "s"}};
  std::map<std::pair<model::ProfileKey, int>, double> seconds;
  model::BatchTimings out;
  for (const char* name : {"profileSeconds", "profileBatches"}) {
    auto samples = prometheus.Query(Render(QueryFor(pipeline, name), values));
    if (!samples) return Named(name, samples.error());
    const bool counts = std::string_view(name) == "profileBatches";
    for (const Sample& s : *samples) {
      const int rows = Rows(s);
      if (rows == 0 || !std::isfinite(s.value) || s.value < 0) continue;
      const model::ProfileKey key{Label(s, "task"), Label(s, "variant"),
                                  Label(s, "hardware_class")};
      if (!counts) {
        seconds[{key, rows}] = s.value;
        continue;
      }
      const auto total = seconds.find({key, rows});
      if (total == seconds.end() || s.value <= 0) continue;
      out[key][rows] = {.batches = s.value, .mean_ms = 1000 * total->second / s.value};
    }
  }
  return out;
}

// Cumulative queries by bucket upper bound, from series by their `le` label ("+Inf" included);
// a label that is not a number is left out.
std::map<double, double> SizeBuckets(const std::map<std::string, double>& by_le) {
  std::map<double, double> out;
  for (const auto& [le, count] : by_le) {
    char* end = nullptr;
    const double bound = std::strtod(le.c_str(), &end);
    if (end != le.c_str() && *end == '\0' && !std::isnan(bound) && bound > 0) out[bound] = count;
  }
  return out;
}

}  // namespace

Result<model::MetricsSnapshot> ReadSnapshot(const PrometheusClient& prometheus,
                                            const model::Pipeline& pipeline) {
  model::MetricsSnapshot snapshot;
  std::map<std::string, std::string> values = {{"pipeline", pipeline.name},
                                               {"namespace", pipeline.namespace_name}};
  for (const model::Path& path : pipeline.spec.paths) {
    values["path"] = path.name;
    auto rate = One(prometheus, "pathRate", Render(QueryFor(pipeline, "pathRate"), values));
    if (!rate) return rate.error();
    if (*rate) {
      snapshot.path_rates_rps[path.name] = **rate;
    } else {
      snapshot.missing.push_back("pathRate{path=\"" + path.name + "\"}");
    }
    // Latency informs reports, not the plan, so its absence is not "missing data".
    auto latency =
        One(prometheus, "pathLatency", Render(QueryFor(pipeline, "pathLatency"), values));
    if (!latency) return latency.error();
    if (*latency) snapshot.path_latency_ms[path.name] = **latency;
  }
  values.erase("path");
  auto arrival = One(prometheus, "arrivalRate", Render(QueryFor(pipeline, "arrivalRate"), values));
  if (!arrival) return arrival.error();
  if (*arrival) {
    snapshot.arrival_rate_rps = **arrival;
  } else if (pipeline.spec.paths.empty()) {
    snapshot.missing.emplace_back("arrivalRate");
  }
  if (optimizer::OptimizerOf(pipeline.spec).memory.measured_factors) {
    const std::string name = "multiplicativeFactor";
    auto factors = prometheus.Query(Render(QueryFor(pipeline, name), values));
    if (!factors) return Named(name, factors.error());
    for (const Sample& s : *factors) {
      auto task = s.labels.find("task"), variant = s.labels.find("variant");
      if (task == s.labels.end() || variant == s.labels.end() || !std::isfinite(s.value)) continue;
      snapshot.multiplicative_factors[task->second + "/" + variant->second] = s.value;
    }
  }
  if (pipeline.spec.router) {
    auto data_plane = ReadDataPlane(prometheus, pipeline);
    if (!data_plane) return data_plane.error();
    snapshot.data_plane = std::move(*data_plane);
    if (optimizer::OptimizerOf(pipeline.spec).memory.measured_mix) {
      auto sizes = ByLabels(prometheus, pipeline, "querySizes", {"le"});
      if (!sizes) return sizes.error();
      snapshot.query_sizes = SizeBuckets(*sizes);
    }
    if (pipeline.spec.profiles.learn != model::ProfileLearning::kOff) {
      auto timings = ReadBatchTimings(prometheus, pipeline);
      if (!timings) return timings.error();
      snapshot.batch_timings = std::move(*timings);
    }
  }
  return snapshot;
}

Result<model::RateHistory> ReadRateHistory(const PrometheusClient& prometheus,
                                           const model::Pipeline& pipeline, int intervals,
                                           double now) {
  model::RateHistory history;
  if (intervals <= 0) return history;
  const double step = pipeline.spec.interval_seconds;
  const double end = now - step;
  std::map<std::string, std::string> values = {{"pipeline", pipeline.name},
                                               {"namespace", pipeline.namespace_name}};
  for (const model::Path& path : pipeline.spec.paths) {
    values["path"] = path.name;
    auto series = prometheus.QueryRange(Render(QueryFor(pipeline, "pathRate"), values),
                                        end - (intervals - 1) * step, end, step);
    if (!series) return Named("pathRate", series.error());
    if (series->empty()) continue;
    std::vector<double>& rates = history[path.name];
    for (const auto& [at, rate] : series->front().points) {
      if (std::isfinite(rate) && rate >= 0) rates.push_back(rate);
    }
    if (rates.empty()) history.erase(path.name);
  }
  return history;
}

}  // namespace pipescale::metrics
