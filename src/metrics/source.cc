#include "metrics/source.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "model/limits.h"
#include "optimizer/registry.h"

namespace pipescale::metrics {

namespace {

// The default queries, stated once for both of their forms: {{selector}} stands for the label
// matchers that pick one pipeline's series (and one path's, for a query per path), {{by}} for
// the labels an all-pipelines query keeps apart (see Scoped).
struct DefaultQuery {
  const char* text;
  bool per_path = false;
  // How old a shared answer may be, when not SharedQueries' own max age.
  std::optional<std::chrono::milliseconds> max_age;
};

// Requests held at the door wait for the wake that reading them starts: a shared answer at most
// this old, so the wake waits on the routers' scrape, not on the other pipelines' looks.
constexpr std::chrono::milliseconds kDoorMaxAge(250);
// The operator's surge watch reads the recent rates every reconciler::kSurgeLookSeconds: an
// answer half that old serves every pipeline's watch and the reconciles it queues.
constexpr std::chrono::milliseconds kRecentMaxAge(1000);

const std::map<std::string, DefaultQuery>& Defaults() {
  static const std::map<std::string, DefaultQuery> kQueries = {
      // The larger of the last 10 s and the last 30 s, as Knative's autoscaler has a panic window
      // beside its stable one: a rise shows within seconds (the stable window alone ramps up over
      // all 30), a fall only as the stable window sees it. The windows need the routers scraped
      // every few seconds (the chart's PodMonitor does); where a window holds fewer than two
      // samples, the last 2 minutes stand in rather than the series reading as missing.
      {"pathRate",
       {R"(sum by ({{by}}) (rate(pipescale_requests_total{{{selector}}}[10s])) > sum by ({{by}}) (rate(pipescale_requests_total{{{selector}}}[30s])) or sum by ({{by}}) (rate(pipescale_requests_total{{{selector}}}[30s])) or sum by ({{by}}) (rate(pipescale_requests_total{{{selector}}}[2m])))",
        true}},
      {"pathLatency",
       {R"(1000 * histogram_quantile(0.99, sum by ({{by}}le) (rate(pipescale_request_duration_seconds_bucket{{{selector}}}[1m]))))",
        true}},
      {"arrivalRate",
       {R"(sum by ({{by}}) (rate(pipescale_requests_total{{{selector}}}[30s])) or sum by ({{by}}) (rate(pipescale_requests_total{{{selector}}}[2m])))"}},
      // One series per (task, variant) that served requests in the window.
      {"multiplicativeFactor",
       {R"(sum by ({{by}}task, variant) (rate(pipescale_model_emitted_requests_total{{{selector}}}[1m])) / sum by ({{by}}task, variant) (rate(pipescale_model_requests_total{{{selector}}}[1m])) > 0)"}},
      // The router's data plane, by reason, task or (task, variant), over the last minute.
      {"routerDrops",
       {R"(sum by ({{by}}reason) (rate(pipescale_router_drops_total{{{selector}}}[1m])))"}},
      {"routerShed",
       {R"(sum by ({{by}}path, reason) (rate(pipescale_router_shed_total{{{selector}}}[1m])))"}},
      {"routerReroutes",
       {R"(sum by ({{by}}) (rate(pipescale_router_reroutes_total{{{selector}}}[1m])))"}},
      {"routerSpillShare",
       {R"(sum by ({{by}}task) (rate(pipescale_router_spills_total{{{selector}}}[1m])) / sum by ({{by}}task) (rate(pipescale_router_task_requests_total{{{selector}}}[1m])))"}},
      {"routerPoolWaiting",
       {R"(max by ({{by}}task) (pipescale_router_pool_waiting_requests{{{selector}}}))"}},
      // Requests held at the router's door for a task without a Ready pod, by path ("" for those
      // naming none): what wakes a pipeline at zero (spec.scaleToZero).
      {"doorWaiting",
       {R"(sum by ({{by}}path) (pipescale_router_door_waiting_requests{{{selector}}}))", false,
        kDoorMaxAge}},
      // How bursty each task's arrivals are (routing/dispersion.h), over the routers: each
      // router sees a random share q of the requests, whose index is 1 + q (D - 1), so the
      // pipeline's is 1 plus the sum of theirs less 1 each.
      // Each path's arrivals over the routers' last seconds (routing/recent_rate.h), every
      // router's: the first sign of a burst (reconciler/surge.h).
      {"recentRate",
       {R"(sum by ({{by}}path) (pipescale_router_recent_rate{{{selector}}}))", false,
        kRecentMaxAge}},
      // Of each path's requests over the last minute, the share not answered 200: FA2's feedback
      // on what its clients saw (reconciler/slo_feedback.h). One less the 200s' share: the
      // routers declare each path's 200 series, and a series of no code (not a router's)
      // leaves the path without a share rather than counting as failures.
      {"pathErrorShare",
       {R"(1 - sum by ({{by}}path) (rate(pipescale_requests_total{{{selector}}code="200"}[1m])) / sum by ({{by}}path) (rate(pipescale_requests_total{{{selector}}}[1m])))"}},
      {"arrivalDispersion",
       {R"(1 + sum by ({{by}}task) (pipescale_router_arrival_dispersion{{{selector}}} - 1))"}},
      {"routerBatchRows",
       {R"(sum by ({{by}}task) (rate(pipescale_router_batch_rows_sum{{{selector}}}[1m])) / sum by ({{by}}task) (rate(pipescale_router_batch_rows_count{{{selector}}}[1m])))"}},
      {"routerVariantRate",
       {R"(sum by ({{by}}task, variant) (rate(pipescale_router_task_requests_total{{{selector}}code="200"}[1m])))"}},
      // Batch service times per (task, variant, class, rows) over spec.profiles.window: the
      // time the batches took in all, and how many there were (their mean is d(rows)).
      {"profileSeconds",
       {R"(sum by ({{by}}task, variant, hardware_class, rows) (increase(pipescale_router_batch_service_seconds_sum{{{selector}}}[{{window}}])))"}},
      {"profileBatches",
       {R"(sum by ({{by}}task, variant, hardware_class, rows) (increase(pipescale_router_batch_service_seconds_count{{{selector}}}[{{window}}])))"}},
      // HPA's utilisation: busy seconds per Ready pod-second of each (task, class), over the
      // last 15 s as metrics-server's resolution gives it, or the last minute where 15 s holds
      // fewer than two scrapes (the chart scrapes model pods every 30 s).
      {"utilization",
       {R"(sum by ({{by}}task, hardware_class) (rate(pipescale_model_busy_seconds_total{{{selector}}}[15s])) / sum by ({{by}}task, hardware_class) (avg_over_time(pipescale_model_ready{{{selector}}}[15s])) or sum by ({{by}}task, hardware_class) (rate(pipescale_model_busy_seconds_total{{{selector}}}[1m])) / sum by ({{by}}task, hardware_class) (avg_over_time(pipescale_model_ready{{{selector}}}[1m])))"}},
      // Kairos's query-size mix: queries by size bucket over two minutes, every path's.
      {"querySizes",
       {R"(sum by ({{by}}le) (increase(pipescale_router_query_rows_bucket{{{selector}}}[2m])))"}},
  };
  return kQueries;
}

// A default query in one of its forms: for one pipeline (and path), with placeholders left for
// Render, or for every pipeline at once, grouped by namespace and pipeline (and path).
std::string Scoped(const DefaultQuery& query, bool all_pipelines) {
  std::string selector, by;
  if (all_pipelines) {
    by = query.per_path ? "namespace, pipeline, path, " : "namespace, pipeline, ";
  } else {
    selector = query.per_path
                   ? R"(namespace="{{namespace}}",pipeline="{{pipeline}}",path="{{path}}",)"
                   : R"(namespace="{{namespace}}",pipeline="{{pipeline}}",)";
  }
  std::string out = Render(query.text, {{"selector", selector}, {"by", by}});
  // What an empty part leaves, in the form people read: `sum by () (x)` is `sum(x)`, and a
  // trailing comma in `{a="b",}` goes.
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"sum by () (", "sum("},
                                 {", ) (", ") ("},
                                 {",}", "}"}}) {
    for (size_t at = out.find(from); at != std::string::npos; at = out.find(from, at)) {
      out.replace(at, from.size(), to);
    }
  }
  return out;
}

}  // namespace

const std::map<std::string, std::string>& DefaultQueries() {
  static const std::map<std::string, std::string> kQueries = [] {
    std::map<std::string, std::string> out;
    for (const auto& [name, query] : Defaults()) out[name] = Scoped(query, false);
    return out;
  }();
  return kQueries;
}

std::string AllPipelinesQuery(const std::string& name) { return Scoped(Defaults().at(name), true); }

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

// Batch rows past this are not a batch size any spec may declare.
constexpr long kMaxBatchRows = limits::kMaxBatch;

std::string QueryFor(const model::Pipeline& pipeline, const std::string& name) {
  auto it = pipeline.spec.metrics.queries.find(name);
  return it != pipeline.spec.metrics.queries.end() ? it->second : DefaultQueries().at(name);
}

Error Named(const std::string& name, Error e) {
  e.message = "metrics." + name + ": " + e.message;
  return e;
}

// Where one snapshot's queries go: a pipeline's own templates to Prometheus as written; the
// defaults to the shared all-pipelines answers when there are any, else rendered for the
// pipeline alone.
class Reader {
 public:
  Reader(const PrometheusClient& prometheus, const model::Pipeline& pipeline, SharedQueries* shared)
      : prometheus_(prometheus), pipeline_(pipeline), shared_(shared) {}

  // The series of query `name` for the pipeline; `values` adds placeholders (path, window).
  Result<std::vector<Sample>> Samples(const std::string& name,
                                      std::map<std::string, std::string> values = {}) const {
    values["pipeline"] = pipeline_.name;
    values["namespace"] = pipeline_.namespace_name;
    const bool own = pipeline_.spec.metrics.queries.contains(name);
    if (shared_ == nullptr || own) {
      auto samples = prometheus_.Query(Render(QueryFor(pipeline_, name), values));
      if (!samples) return Named(name, samples.error());
      return samples;
    }
    auto all = shared_->Read(prometheus_, Render(AllPipelinesQuery(name), values),
                             pipeline_.namespace_name, pipeline_.name, Defaults().at(name).max_age);
    if (!all) return Named(name, all.error());
    const auto path = values.find("path");
    if (path == values.end()) return all;
    std::vector<Sample> out;
    for (Sample& s : *all) {
      if (LabelOf(s, "path") == path->second) out.push_back(std::move(s));
    }
    return out;
  }

  // The single value of a query, or nullopt when the result is empty or not a number.
  Result<std::optional<double>> One(const std::string& name,
                                    std::map<std::string, std::string> values = {}) const {
    auto samples = Samples(name, std::move(values));
    if (!samples) return samples.error();
    if (samples->empty() || std::isnan(samples->front().value)) return std::optional<double>{};
    return std::optional<double>{samples->front().value};
  }

  // Each series' value by its `labels` joined with '/', finite values only.
  Result<std::map<std::string, double>> ByLabels(const std::string& name,
                                                 const std::vector<std::string>& labels) const {
    auto samples = Samples(name);
    if (!samples) return samples.error();
    std::map<std::string, double> out;
    for (const Sample& s : *samples) {
      std::string key;
      for (size_t i = 0; i < labels.size(); ++i)
        key += (i > 0 ? "/" : "") + LabelOf(s, labels[i].c_str());
      if (std::isfinite(s.value)) out[key] = s.value;
    }
    return out;
  }

  const model::Pipeline& pipeline() const { return pipeline_; }

 private:
  const PrometheusClient& prometheus_;
  const model::Pipeline& pipeline_;
  SharedQueries* shared_;
};

Result<model::DataPlaneSnapshot> ReadDataPlane(const Reader& reader) {
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
    auto read = reader.ByLabels(r.name, r.labels);
    if (!read) return read.error();
    *r.into = std::move(*read);
  }
  out.reroutes_rps = reroutes.empty() ? 0 : reroutes.begin()->second;
  return out;
}

// The batch rows a series names, or 0 when its label is not a batch size.
int Rows(const Sample& s) {
  const std::string rows = LabelOf(s, "rows");
  char* end = nullptr;
  const long n = std::strtol(rows.c_str(), &end, 10);
  return rows.empty() || *end != '\0' || n < 1 || n > kMaxBatchRows ? 0 : static_cast<int>(n);
}

// The router's batch times over the profiles' window, from the total seconds and the number of
// batches of each (task, variant, class, rows).
Result<model::BatchTimings> ReadBatchTimings(const Reader& reader) {
  const std::map<std::string, std::string> window = {
      {"window",
       std::to_string(static_cast<long>(reader.pipeline().spec.profiles.window_seconds)) + "s"}};
  std::map<std::pair<model::ProfileKey, int>, double> seconds;
  model::BatchTimings out;
  for (const char* name : {"profileSeconds", "profileBatches"}) {
    auto samples = reader.Samples(name, window);
    if (!samples) return samples.error();
    const bool counts = std::string_view(name) == "profileBatches";
    for (const Sample& s : *samples) {
      const int rows = Rows(s);
      if (rows == 0 || !std::isfinite(s.value) || s.value < 0) continue;
      const model::ProfileKey key{LabelOf(s, "task"), LabelOf(s, "variant"),
                                  LabelOf(s, "hardware_class")};
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

// Each path's rate and latency.
Status ReadPaths(const Reader& reader, model::MetricsSnapshot& snapshot) {
  for (const model::Path& path : reader.pipeline().spec.paths) {
    auto rate = reader.One("pathRate", {{"path", path.name}});
    if (!rate) return rate.error();
    if (*rate) {
      snapshot.path_rates_rps[path.name] = **rate;
    } else {
      snapshot.missing.push_back("pathRate{path=\"" + path.name + "\"}");
    }
    // Latency informs reports, not the plan, so its absence is not "missing data".
    auto latency = reader.One("pathLatency", {{"path", path.name}});
    if (!latency) return latency.error();
    if (*latency) snapshot.path_latency_ms[path.name] = **latency;
  }
  return Done{};
}

// Each path's recent rate; what is not a rate (NaN, negative) is left out.
Result<std::map<std::string, double>> ReadRecentRates(const Reader& reader) {
  auto recent = reader.ByLabels("recentRate", {"path"});
  if (!recent) return recent.error();
  std::erase_if(*recent, [](const auto& path_rate) {
    return !(path_rate.second >= 0) || !std::isfinite(path_rate.second);
  });
  return recent;
}

// What the router measured: its data plane, and where the optimizer reads them, the query
// sizes and the batch times.
Status ReadRouter(const Reader& reader, model::MetricsSnapshot& snapshot) {
  const model::Pipeline& pipeline = reader.pipeline();
  auto data_plane = ReadDataPlane(reader);
  if (!data_plane) return data_plane.error();
  snapshot.data_plane = std::move(*data_plane);
  if (optimizer::OptimizerOf(pipeline.spec).memory.measured_mix) {
    auto sizes = reader.ByLabels("querySizes", {"le"});
    if (!sizes) return sizes.error();
    snapshot.query_sizes = SizeBuckets(*sizes);
  }
  if (optimizer::OptimizerOf(pipeline.spec).memory.slo_feedback) {
    auto errors = reader.ByLabels("pathErrorShare", {"path"});
    if (!errors) return errors.error();
    std::erase_if(*errors, [](const auto& share) { return !(share.second >= 0); });
    snapshot.path_error_share = std::move(*errors);
  }
  auto dispersion = reader.ByLabels("arrivalDispersion", {"task"});
  if (!dispersion) return dispersion.error();
  std::erase_if(*dispersion, [](const auto& task_index) { return !(task_index.second >= 1); });
  snapshot.task_dispersion = std::move(*dispersion);
  auto recent = ReadRecentRates(reader);
  if (!recent) return recent.error();
  snapshot.recent_path_rates_rps = std::move(*recent);
  if (pipeline.spec.scale_to_zero) {
    auto waiting = reader.ByLabels("doorWaiting", {"path"});
    if (!waiting) return waiting.error();
    std::erase_if(*waiting, [](const auto& path_count) { return path_count.second <= 0; });
    snapshot.door_waiting = std::move(*waiting);
  }
  if (pipeline.spec.profiles.learn != model::ProfileLearning::kOff) {
    auto timings = ReadBatchTimings(reader);
    if (!timings) return timings.error();
    snapshot.batch_timings = std::move(*timings);
  }
  return Done{};
}

}  // namespace

Result<model::MetricsSnapshot> ReadSnapshot(const PrometheusClient& prometheus,
                                            const model::Pipeline& pipeline,
                                            SharedQueries* shared) {
  const Reader reader(prometheus, pipeline, shared);
  model::MetricsSnapshot snapshot;
  if (Status paths = ReadPaths(reader, snapshot); !paths) return paths.error();
  auto arrival = reader.One("arrivalRate");
  if (!arrival) return arrival.error();
  if (*arrival) {
    snapshot.arrival_rate_rps = **arrival;
  } else if (pipeline.spec.paths.empty()) {
    snapshot.missing.emplace_back("arrivalRate");
  }
  if (optimizer::OptimizerOf(pipeline.spec).memory.measured_factors) {
    auto factors = reader.Samples("multiplicativeFactor");
    if (!factors) return factors.error();
    for (const Sample& s : *factors) {
      auto task = s.labels.find("task"), variant = s.labels.find("variant");
      if (task == s.labels.end() || variant == s.labels.end() || !std::isfinite(s.value)) continue;
      snapshot.multiplicative_factors[task->second + "/" + variant->second] = s.value;
    }
  }
  if (optimizer::OptimizerOf(pipeline.spec).memory.reads_utilization) {
    auto busy = reader.ByLabels("utilization", {"task", "hardware_class"});
    if (!busy) return busy.error();
    snapshot.utilization = std::move(*busy);
  }
  if (pipeline.spec.router) {
    if (Status router = ReadRouter(reader, snapshot); !router) return router.error();
  }
  return snapshot;
}

Result<std::map<std::string, double>> ReadRecentRates(const PrometheusClient& prometheus,
                                                      const model::Pipeline& pipeline,
                                                      SharedQueries* shared) {
  return ReadRecentRates(Reader(prometheus, pipeline, shared));
}

Result<model::RateHistory> ReadRateHistory(const PrometheusClient& prometheus,
                                           const model::Pipeline& pipeline, int intervals,
                                           double now, SharedQueries* shared) {
  model::RateHistory history;
  if (intervals <= 0) return history;
  const double step = pipeline.spec.interval_seconds;
  // On the interval's grid, so that every pipeline read within one interval asks the same range.
  const double end = std::floor(now / step) * step - step;
  const double start = end - (intervals - 1) * step;
  const std::map<std::string, std::string> values = {{"pipeline", pipeline.name},
                                                     {"namespace", pipeline.namespace_name}};
  const bool from_shared = shared != nullptr && !pipeline.spec.metrics.queries.contains("pathRate");
  std::vector<Series> all;  // every path's, when from the shared answer
  if (from_shared) {
    auto series = shared->ReadRange(prometheus, Render(AllPipelinesQuery("pathRate"), values),
                                    start, end, step, pipeline.namespace_name, pipeline.name);
    if (!series) return Named("pathRate", series.error());
    all = std::move(*series);
  }
  for (const model::Path& path : pipeline.spec.paths) {
    std::vector<Series> mine;
    if (from_shared) {
      for (const Series& s : all) {
        if (LabelOf(s, "path") == path.name) mine.push_back(s);
      }
    } else {
      std::map<std::string, std::string> with_path = values;
      with_path["path"] = path.name;
      auto series = prometheus.QueryRange(Render(QueryFor(pipeline, "pathRate"), with_path), start,
                                          end, step);
      if (!series) return Named("pathRate", series.error());
      mine = std::move(*series);
    }
    if (mine.empty()) continue;
    std::vector<double>& rates = history[path.name];
    for (const auto& [at, rate] : mine.front().points) {
      if (std::isfinite(rate) && rate >= 0) rates.push_back(rate);
    }
    if (rates.empty()) history.erase(path.name);
  }
  return history;
}

}  // namespace pipescale::metrics
