#include "arrival_meter.h"

#include <chrono>

namespace pipescale::router {

namespace {
constexpr std::int64_t kSlots = std::int64_t{routing::kDispersionWindowSeconds} + 1;

// The slot of a ring that counts `second` (steady-clock seconds are never negative).
size_t SlotOf(std::int64_t second) { return static_cast<size_t>(second % kSlots); }
}  // namespace

void ArrivalMeter::Arrived(const routing::Graph& graph, int path, std::int64_t second) {
  const std::lock_guard lock(mu_);
  for (int task : graph.PathTasks(path)) {
    const std::string& name = graph.TaskName(task);
    auto ring = rings_.find(name);
    if (ring == rings_.end()) ring = rings_.emplace(name, Ring{}).first;
    Second& slot = ring->second[SlotOf(second)];
    if (slot.at != second) slot = {.at = second, .count = 0};
    slot.count += 1;
  }
}

std::map<std::string, double> ArrivalMeter::Dispersions(std::int64_t now_second) const {
  const std::lock_guard lock(mu_);
  std::map<std::string, double> out;
  std::vector<double> counts;
  for (auto ring = rings_.begin(); ring != rings_.end();) {
    counts.clear();
    bool any = false;
    for (std::int64_t s = now_second - routing::kDispersionWindowSeconds; s < now_second; ++s) {
      const Second& slot = ring->second[SlotOf(s)];
      counts.push_back(slot.at == s ? slot.count : 0);
      any = any || counts.back() > 0;
    }
    if (!any && ring->second[SlotOf(now_second)].at != now_second) {
      ring = rings_.erase(ring);
      continue;
    }
    out[ring->first] = routing::ArrivalDispersion(counts);
    ++ring;
  }
  return out;
}

std::int64_t ArrivalMeter::NowSecond() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::vector<prometheus::MetricFamily> ArrivalMeter::Collect() const {
  prometheus::MetricFamily family{
      .name = "pipescale_router_arrival_dispersion",
      .help =
          "How bursty each task's arrivals are: the index of dispersion (variance over mean) of "
          "their per-second counts over the last 2 minutes, beyond Poisson noise (1: Poisson)",
      .type = prometheus::MetricType::Gauge,
      .metric = {}};
  for (const auto& [task, index] : Dispersions(NowSecond())) {
    prometheus::ClientMetric metric;
    metric.label = {{"namespace", namespace_}, {"pipeline", pipeline_}, {"task", task}};
    metric.gauge.value = index;
    family.metric.push_back(std::move(metric));
  }
  return {std::move(family)};
}

}  // namespace pipescale::router
