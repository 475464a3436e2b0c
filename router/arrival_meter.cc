#include "arrival_meter.h"

#include <chrono>
#include <span>

namespace pipescale::router {

namespace {
constexpr std::int64_t kSlots = std::int64_t{routing::kDispersionWindowSeconds} + 1;

// The slot of a ring that counts `second` (steady-clock seconds are never negative).
size_t SlotOf(std::int64_t second) { return static_cast<size_t>(second % kSlots); }

// A gauge family with one series per entry of `values`, labelled `label` (and the pipeline).
prometheus::MetricFamily Gauges(std::string name, std::string help, const std::string& label,
                                const std::map<std::string, double>& values,
                                const std::string& namespace_name, const std::string& pipeline) {
  prometheus::MetricFamily family{.name = std::move(name),
                                  .help = std::move(help),
                                  .type = prometheus::MetricType::Gauge,
                                  .metric = {}};
  for (const auto& [key, value] : values) {
    prometheus::ClientMetric metric;
    metric.label = {{"namespace", namespace_name}, {"pipeline", pipeline}, {label, key}};
    metric.gauge.value = value;
    family.metric.push_back(std::move(metric));
  }
  return family;
}
}  // namespace

void ArrivalMeter::Count(Rings& rings, const std::string& name, std::int64_t second) {
  auto ring = rings.find(name);
  if (ring == rings.end()) ring = rings.emplace(name, Ring{}).first;
  Second& slot = ring->second[SlotOf(second)];
  if (slot.at != second) slot = {.at = second, .count = 0};
  slot.count += 1;
}

void ArrivalMeter::Arrived(const routing::Graph& graph, int path, std::int64_t second) {
  const std::lock_guard lock(mu_);
  if (path < 0) return;
  Count(path_rings_, graph.PathName(path), second);
  for (int task : graph.PathTasks(path)) Count(rings_, graph.TaskName(task), second);
}

template <typename F>
void ArrivalMeter::ForWindows(Rings& rings, std::int64_t now_second, F&& f) {
  std::vector<double> counts;
  for (auto ring = rings.begin(); ring != rings.end();) {
    counts.clear();
    bool any = false;
    for (std::int64_t s = now_second - routing::kDispersionWindowSeconds; s < now_second; ++s) {
      const Second& slot = ring->second[SlotOf(s)];
      counts.push_back(slot.at == s ? slot.count : 0);
      any = any || counts.back() > 0;
    }
    if (!any && ring->second[SlotOf(now_second)].at != now_second) {
      ring = rings.erase(ring);
      continue;
    }
    f(ring->first, std::span<const double>(counts));
    ++ring;
  }
}

std::map<std::string, double> ArrivalMeter::Dispersions(std::int64_t now_second) const {
  const std::lock_guard lock(mu_);
  std::map<std::string, double> out;
  ForWindows(rings_, now_second, [&](const std::string& task, std::span<const double> counts) {
    out[task] = routing::ArrivalDispersion(counts);
  });
  return out;
}

std::map<std::string, double> ArrivalMeter::RecentRates(std::int64_t now_second) const {
  const std::lock_guard lock(mu_);
  std::map<std::string, double> out;
  ForWindows(path_rings_, now_second, [&](const std::string& path, std::span<const double> counts) {
    out[path] = routing::RecentRate(counts.last(routing::kRecentRateSeconds));
  });
  return out;
}

std::int64_t ArrivalMeter::NowSecond() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::vector<prometheus::MetricFamily> ArrivalMeter::Collect() const {
  const std::int64_t now = NowSecond();
  return {Gauges("pipescale_router_arrival_dispersion",
                 "How bursty each task's arrivals are: the index of dispersion (variance over "
                 "mean) of their per-second counts over the last 2 minutes, beyond Poisson noise "
                 "(1: Poisson)",
                 "task", Dispersions(now), namespace_, pipeline_),
          Gauges("pipescale_router_recent_rate",
                 "Each path's requests per second over the last 2 complete seconds, counted as "
                 "they arrive (refused at the door too): the first sign of a burst",
                 "path", RecentRates(now), namespace_, pipeline_)};
}

}  // namespace pipescale::router
