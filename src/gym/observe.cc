// What the run shows: the clients' counts (as pipescale-loadgen keeps them), the per-second
// counters the router and the model pods would export, and from them the MetricsSnapshot the
// operator's default PromQL queries (metrics/source.cc) would read: the same windows, the same
// histogram buckets and quantile interpolation.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "gym/world.h"
#include "optimizer/pool.h"
#include "routing/dispersion.h"
#include "routing/recent_rate.h"
#include "routing/request.h"

namespace pipescale::gym::engine {
namespace {

// The router's pipescale_request_duration_seconds buckets (router/metrics.cc).
constexpr double kDurationBounds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
static_assert(std::size(kDurationBounds) + 1 == std::tuple_size_v<DurationBuckets>);

// The bucket of a duration in seconds: the first bound at or above it (le), or the +Inf one.
size_t BucketOf(double seconds) {
  return std::lower_bound(std::begin(kDurationBounds), std::end(kDurationBounds), seconds) -
         std::begin(kDurationBounds);
}

// Prometheus's histogram_quantile over bucket counts at kDurationBounds (the last one +Inf):
// linear within the bucket the rank falls in; the highest finite bound past the last. NaN
// without counts.
double HistogramQuantile(const DurationBuckets& counts, double q) {
  double total = 0;
  for (double c : counts) total += c;
  if (total <= 0) return std::numeric_limits<double>::quiet_NaN();
  constexpr size_t kBuckets = std::size(kDurationBounds);
  const double rank = q * total;
  double below = 0;
  for (size_t b = 0; b < kBuckets; ++b) {
    if (below + counts[b] >= rank) {
      const double lower = b == 0 ? 0 : kDurationBounds[b - 1];
      if (counts[b] == 0) return lower;
      return lower + (kDurationBounds[b] - lower) * (rank - below) / counts[b];
    }
    below += counts[b];
  }
  return kDurationBounds[kBuckets - 1];
}

// The nearest-rank percentile, as pipescale-loadgen reports.
double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  const auto at =
      v.begin() + static_cast<std::ptrdiff_t>(std::clamp<size_t>(rank, 1, v.size()) - 1);
  std::nth_element(v.begin(), at, v.end());
  return *at;
}

// The path's name in the report: "unlisted" for walks the pipeline's paths do not name, as the
// router and the load generator count them.
std::string ReportedPath(const model::Pipeline& pipeline, int path) {
  return path >= 0 ? pipeline.spec.paths[path].name : "unlisted";
}

// Adds `sign` times each count of `from` to `into`, dropping a key whose count returns to 0, as
// it would be absent from a sum over the seconds that remain.
template <typename Map>
void AddCounts(Map& into, const Map& from, double sign) {
  for (const auto& [k, n] : from) {
    auto& sum = into[k];
    sum += sign * n;
    if (sum == 0) into.erase(k);
  }
}

template <typename Key>
void AddPairs(std::map<Key, std::pair<double, double>>& into,
              const std::map<Key, std::pair<double, double>>& from, double sign) {
  for (const auto& [k, v] : from) {
    auto& sum = into[k];
    sum.first += sign * v.first;
    sum.second += sign * v.second;
    if (sum.first == 0 && sum.second == 0) into.erase(k);
  }
}

// The fields Snapshot and DataPlane read over a minute.
void AddMinute(SecondCounts& into, const SecondCounts& s, double sign) {
  for (size_t p = 0; p < s.ok_buckets.size(); ++p) {
    for (size_t b = 0; b < s.ok_buckets[p].size(); ++b)
      into.ok_buckets[p][b] += sign * s.ok_buckets[p][b];
  }
  AddCounts(into.served, s.served, sign);
  AddCounts(into.emitted, s.emitted, sign);
  AddCounts(into.variant_ok, s.variant_ok, sign);
  AddCounts(into.drops, s.drops, sign);
  AddCounts(into.shed, s.shed, sign);
  into.reroutes += sign * s.reroutes;
  AddCounts(into.spills, s.spills, sign);
  AddCounts(into.task_calls, s.task_calls, sign);
  AddPairs(into.batch_rows, s.batch_rows, sign);
}

}  // namespace

void World::AtDoor(Walk& w, bool waiting) {
  if (w.at_door == waiting) return;
  w.at_door = waiting;
  door_waiting[w.state.path] += waiting ? 1 : -1;
  if (waiting) WatchDoor(w.state.path);
}

void World::RecordRequest(int path, int code, const std::string& reason, double ms, bool cold) {
  const auto at = static_cast<size_t>(path) + 1;
  current.requests[at][code] += 1;
  PathOutcome& out = path_outcomes[at];
  ++out.sent;
  if (cold) {
    ++out.cold;
    if (code == 200) cold_ok_ms[at].push_back(ms);
    if (code == 200 && (out.slo_ms <= 0 || ms <= out.slo_ms)) ++out.cold_within_slo;
  }
  ++out.codes[std::to_string(code)];
  IntervalPath& row = interval_paths[at];
  ++row.sent;
  if (code != 200) {
    ++out.dropped[reason];
    return;
  }
  ++out.answered;
  current.ok_buckets[at][BucketOf(ms / 1000)] += 1;
  all_ok_ms[at].push_back(ms);
  row.ok_ms.push_back(ms);
  if (out.slo_ms <= 0 || ms <= out.slo_ms) {
    ++out.within_slo;
    ++row.within;
  }
}

// Calls `f` with each of the last `window` seconds.
template <typename F>
void World::ForSeconds(double window, F&& f) const {
  const size_t n = std::min(seconds.size(), static_cast<size_t>(window));
  for (size_t i = seconds.size() - n; i < seconds.size(); ++i) f(seconds[i]);
}

double World::Rate(int path, double window) const {
  double count = 0;
  ForSeconds(window, [&](const SecondCounts& s) {
    for (size_t p = 0; p < s.requests.size(); ++p) {
      if (path != -2 && static_cast<int>(p) != path + 1) continue;
      for (const auto& [code, n] : s.requests[p]) count += static_cast<double>(n);
    }
  });
  return count / std::max(1.0, std::min(window, static_cast<double>(seconds.size())));
}

model::MetricsSnapshot World::Snapshot() const {
  model::MetricsSnapshot m;
  for (size_t i = 0; i < pipeline.spec.paths.size(); ++i) {
    const model::Path& path = pipeline.spec.paths[i];
    const int p = static_cast<int>(i);
    m.path_rates_rps[path.name] = std::max(Rate(p, 10), Rate(p, 30));
    const double p99 = HistogramQuantile(last_minute.ok_buckets[i + 1], 0.99);
    if (!std::isnan(p99)) m.path_latency_ms[path.name] = 1000 * p99;
    long all = 0;
    long failed = 0;
    ForSeconds(kMinute, [&](const SecondCounts& s) {
      for (const auto& [code, n] : s.requests[i + 1]) {
        all += n;
        if (code != 200) failed += n;
      }
    });
    if (failed > 0) m.path_error_share[path.name] = static_cast<double>(failed) / all;
  }
  m.arrival_rate_rps = Rate(-2, 30);
  for (const auto& [k, served] : last_minute.served) {
    const auto emitted = last_minute.emitted.find(k);
    if (served > 0 && emitted != last_minute.emitted.end() && emitted->second > 0) {
      const model::Task& t = pipeline.spec.tasks[k.first];
      m.multiplicative_factors[t.name + "/" + t.variants[k.second].name] = emitted->second / served;
    }
  }
  // What metrics::ReadSnapshot reads only where it is used.
  if (optimizer != nullptr && optimizer->memory.reads_utilization) m.utilization = Utilization();
  if (!pipeline.spec.router) return m;
  if (pipeline.spec.scale_to_zero) {
    for (const auto& [path, n] : door_waiting) {
      if (n > 0) m.door_waiting[graph->PathName(path)] = static_cast<double>(n);
    }
  }
  m.task_dispersion = Dispersions();
  m.recent_path_rates_rps = RecentRates();
  m.data_plane = DataPlane();
  if (optimizer != nullptr && optimizer->memory.measured_mix) m.query_sizes = QuerySizes();
  if (pipeline.spec.profiles.learn != model::ProfileLearning::kOff) m.batch_timings = Timings();
  return m;
}

model::DataPlaneSnapshot World::DataPlane() const {
  const SecondCounts& s = last_minute;
  const auto per_second = static_cast<double>(kMinute);
  model::DataPlaneSnapshot d;
  for (const auto& [r, n] : s.drops) d.drops_rps[r] = n / per_second;
  for (const auto& [r, n] : s.shed) d.shed_rps[r] = n / per_second;
  d.reroutes_rps = s.reroutes / per_second;
  for (const auto& [k, n] : s.variant_ok) {
    const model::Task& t = pipeline.spec.tasks[k.first];
    d.variant_rps[t.name + "/" + t.variants[k.second].name] = n / per_second;
  }
  for (const auto& [t, n] : s.spills) {
    const auto called = s.task_calls.find(t);
    if (called != s.task_calls.end() && called->second > 0) {
      d.spill_share[pipeline.spec.tasks[t].name] = n / called->second;
    }
  }
  for (const auto& [t, r] : s.batch_rows) {
    if (r.second > 0) d.batch_rows[pipeline.spec.tasks[t].name] = r.first / r.second;
  }
  for (const auto& [t, pool] : pools) {
    if (pool.kairos) {
      d.pool_waiting[pipeline.spec.tasks[t].name] = static_cast<double>(pool.kairos->waiting());
    }
  }
  return d;
}

std::map<std::string, double> World::Utilization() const {
  std::map<std::pair<int, int>, std::pair<double, double>> sums;
  ForSeconds(kUtilizationWindowS, [&](const SecondCounts& s) { AddPairs(sums, s.busy_ready, 1); });
  std::map<std::string, double> out;
  for (const auto& [k, v] : sums) {
    if (v.second <= 0) continue;  // no Ready pod: no reading, as the query's division by 0
    out[optimizer::PoolKey(pipeline.spec.tasks[k.first].name,
                           pipeline.spec.hardware_classes[k.second].name)] = v.first / v.second;
  }
  return out;
}

std::map<std::string, double> World::Dispersions() const {
  std::map<int, std::vector<double>> counts;
  size_t second = 0;
  ForSeconds(routing::kDispersionWindowSeconds, [&](const SecondCounts& s) {
    for (const auto& [task, n] : s.task_arrivals) {
      std::vector<double>& series = counts[task];
      series.resize(second + 1);  // the seconds before its first arrival, and since its last
      series[second] = n;
    }
    ++second;
  });
  std::map<std::string, double> out;
  for (auto& [task, series] : counts) {
    series.resize(second);
    out[pipeline.spec.tasks[task].name] = routing::ArrivalDispersion(series);
  }
  return out;
}

std::map<std::string, double> World::RecentRates() const {
  std::vector<std::vector<double>> counts(pipeline.spec.paths.size());
  ForSeconds(routing::kRecentRateSeconds, [&](const SecondCounts& s) {
    for (std::vector<double>& path : counts) path.push_back(0);
    for (const auto& [path, n] : s.path_arrivals) {
      if (path >= 0 && static_cast<size_t>(path) < counts.size()) counts[path].back() = n;
    }
  });
  std::map<std::string, double> out;
  for (size_t p = 0; p < counts.size(); ++p) {
    out[pipeline.spec.paths[p].name] = routing::RecentRate(counts[p]);
  }
  return out;
}

std::map<double, double> World::QuerySizes() const {
  std::vector<double> bounds = routing::QuerySizeBounds();
  bounds.push_back(std::numeric_limits<double>::infinity());
  std::map<double, double> out;
  for (double b : bounds) out[b] = 0;
  ForSeconds(120, [&](const SecondCounts& s) {
    for (const auto& [rows, n] : s.query_rows) {
      for (double b : bounds) out[b] += rows <= b ? n : 0;
    }
  });
  return out;
}

model::BatchTimings World::Timings() const {
  const auto& sums = profile_window;
  model::BatchTimings out;
  for (const auto& [k, v] : sums) {
    const Deployment& d = deployments[k.first];
    const model::Task& t = pipeline.spec.tasks[d.task];
    const model::ProfileKey key{t.name, t.variants[d.variant].name,
                                pipeline.spec.hardware_classes[d.hw_class].name};
    if (v.second < 0.5) continue;  // every batch of it left the window
    out[key][k.second] = {.batches = v.second, .mean_ms = 1000 * v.first / v.second};
  }
  return out;
}

void World::EndSecond() {
  std::map<int, TaskSample> samples;
  for (int pi : live_pods) {
    Pod& p = pods[pi];
    const Deployment& d = deployments[p.deployment];
    if (p.state != Pod::State::kPending) {
      const model::HardwareClass& c = pipeline.spec.hardware_classes[d.hw_class];
      report.replica_hours[c.name] += 1.0 / 3600;
      report.cost[c.name] += c.cost_per_hour / 3600;
      report.total_cost += c.cost_per_hour / 3600;
    }
    if (p.busy_since_ms >= 0) {
      p.busy_ms += now_ms_ - p.busy_since_ms;
      p.busy_since_ms = now_ms_;
    }
    p.held_ms_area += static_cast<double>(p.outstanding) * (now_ms_ - p.held_since_ms);
    p.held_since_ms = now_ms_;
    if (p.state == Pod::State::kReady) {
      const double busy = std::min(1.0, p.busy_ms / 1000);
      TaskSample& s = samples[d.task];
      ++s.ready;
      s.busy += busy;
      auto& pool = current.busy_ready[{d.task, d.hw_class}];
      pool.first += busy;
      pool.second += 1;
      s.concurrency += p.held_ms_area / 1000;
      replica_seconds_ready += 1;
    }
    p.busy_ms = 0;
    p.held_ms_area = 0;
  }
  for (const auto& [t, n] : current.task_calls) samples[t].arrivals_rps = n;
  if (autoscaler) {
    for (size_t t = 0; t < pipeline.spec.tasks.size(); ++t) {
      autoscaler->Observe(now_ms_ / 1000, pipeline.spec.tasks[t].name,
                          samples[static_cast<int>(t)]);
    }
  }
  // The profiles' window, kept as a running sum: its seconds are many and so are its series.
  for (const auto& [k, v] : current.batch_service) {
    profile_window[k].first += v.first;
    profile_window[k].second += v.second;
  }
  AddMinute(last_minute, current, 1);
  seconds.push_back(std::move(current));
  current = SecondCounts(pipeline.spec.paths.size());
  if (seconds.size() > kMinute) AddMinute(last_minute, seconds[seconds.size() - 1 - kMinute], -1);
  const auto window = static_cast<size_t>(pipeline.spec.profiles.window_seconds);
  if (seconds.size() > window) {
    for (const auto& [k, v] : seconds[seconds.size() - 1 - window].batch_service) {
      profile_window[k].first -= v.first;
      profile_window[k].second -= v.second;
    }
  }
  const size_t keep = std::max<size_t>(120, window + 1);
  while (seconds.size() > keep) seconds.pop_front();
}

void World::RecordInterval() {
  IntervalRow row;
  row.at_s = (now_ms_ - trace_start_ms) / 1000;
  const double span_s = std::max(1e-9, (now_ms_ - last_row_ms) / 1000);
  for (size_t i = 0; i < interval_paths.size(); ++i) {
    IntervalPath& p = interval_paths[i];
    if (i == 0 && p.sent == 0) continue;  // no unlisted walks
    const std::string name = ReportedPath(pipeline, static_cast<int>(i) - 1);
    row.p99_ms[name] = Percentile(p.ok_ms, 0.99);
    row.attainment[name] = p.sent > 0 ? static_cast<double>(p.within) / p.sent : 1;
    p = IntervalPath();
  }
  row.offered_rps = static_cast<double>(arrivals_in_row) / span_s;
  for (const model::Task& t : pipeline.spec.tasks) row.replicas[t.name] = 0;
  for (int pi : live_pods) {
    const Pod& p = pods[pi];
    const Deployment& d = deployments[p.deployment];
    if (p.state == Pod::State::kReady) ++row.replicas[pipeline.spec.tasks[d.task].name];
    if (p.state != Pod::State::kPending) {
      row.cost_per_hour += pipeline.spec.hardware_classes[d.hw_class].cost_per_hour;
    }
  }
  report.intervals.push_back(std::move(row));
  arrivals_in_row = 0;
  last_row_ms = now_ms_;
}

PolicyReport World::Finish() {
  for (size_t i = 0; i < path_outcomes.size(); ++i) {
    PathOutcome out = path_outcomes[i];
    if (i == 0 && out.sent == 0) continue;  // no unlisted walks
    const std::vector<double>& ok = all_ok_ms[i];
    out.p50_ms = Percentile(ok, 0.5);
    out.p99_ms = Percentile(ok, 0.99);
    out.mean_ms = ok.empty() ? 0 : std::accumulate(ok.begin(), ok.end(), 0.0) / ok.size();
    out.cold_p99_ms = Percentile(cold_ok_ms[i], 0.99);
    report.paths[ReportedPath(pipeline, static_cast<int>(i) - 1)] = std::move(out);
  }
  report.accuracy = accuracy_count > 0 ? accuracy_sum / accuracy_count : 0;
  const double run_s = (end_ms_ - trace_start_ms) / 1000;
  report.mean_replicas = run_s > 0 ? replica_seconds_ready / run_s : 0;
  return std::move(report);
}

}  // namespace pipescale::gym::engine
