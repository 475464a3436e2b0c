#include "reconciler/memory.h"

#include <cmath>
#include <set>

#include "api/pipeline_parse.h"

namespace pipescale::reconciler {
namespace {

// (1 - kEwmaAlpha)^10 < 0.01: older rates no longer move Loki's EWMA.
constexpr int kEwmaIntervals = 10;

double GuardQuietUntil(const nlohmann::json& memory) {
  auto it = memory.find("guardQuietUntil");
  if (it == memory.end() || !it->is_number()) return 0;
  const double at = it->get<double>();
  return std::isfinite(at) ? at : 0;
}

// The demand as if the planner had seen `rates` one interval at a time. `at` stays 0, so the
// first decision adds the current rate as the next interval's.
Demand Rebuild(const model::RateHistory& rates, const optimizer::Descriptor& optimizer) {
  Demand demand;
  for (const auto& [path, series] : rates) {
    if (series.empty()) continue;
    if (optimizer.memory.rate_history) {
      const size_t first = series.size() > kMaxSeries ? series.size() - kMaxSeries : 0;
      demand.series[path].assign(series.begin() + static_cast<long>(first), series.end());
    }
    if (optimizer.memory.demand_ewma) {
      double ewma = series.front();
      for (double rate : series) ewma = kEwmaAlpha * rate + (1 - kEwmaAlpha) * ewma;
      demand.rps[path] = ewma;
    }
  }
  return demand;
}

// The adopted query-size mix as the status keeps it; anything malformed (the status is anyone's
// to edit) forgets it, and the spec's mix stands in until the router's measurement settles again.
MixMemory QueryMix(const nlohmann::json& memory) {
  auto it = memory.find("queryMix");
  auto for_spec = memory.find("queryMixFor");
  if (it == memory.end() || !it->is_array() || it->empty() ||
      it->size() > api::limits::kMaxQuerySizes || for_spec == memory.end() ||
      !for_spec->is_string()) {
    return {};
  }
  MixMemory out{.adopted_for = for_spec->get<std::string>()};
  std::set<long> sizes;
  for (const nlohmann::json& q : *it) {
    if (!q.is_object()) return {};
    const auto size = q.find("size"), weight = q.find("weight");
    if (size == q.end() || !size->is_number_integer() || weight == q.end() ||
        !weight->is_number()) {
      return {};
    }
    const long n = size->get<long>();
    const double w = weight->get<double>();
    if (n < 1 || n > api::limits::kMaxBatch || !sizes.insert(n).second || !(w > 0) ||
        w > api::limits::kMaxWeight) {
      return {};
    }
    out.adopted.push_back({.size = static_cast<int>(n), .weight = w});
  }
  return out;
}

}  // namespace

int RebuildIntervals(const optimizer::Descriptor& optimizer) {
  if (optimizer.memory.rate_history) return static_cast<int>(kMaxSeries);
  if (optimizer.memory.demand_ewma) return kEwmaIntervals;
  return 0;
}

nlohmann::json MemoryToStatus(const Memory& memory, const optimizer::Descriptor& optimizer) {
  nlohmann::json out = {{"recommendations", RecommendationsToJson(memory.history)}};
  if (optimizer.memory.slo_guard && memory.demand.guard_quiet_until > 0) {
    out["guardQuietUntil"] = memory.demand.guard_quiet_until;
  }
  // A mix still settling starts over after a failover: a minute later at most.
  if (optimizer.memory.measured_mix && !memory.demand.query_mix.adopted.empty()) {
    nlohmann::json& mix = out["queryMix"] = nlohmann::json::array();
    for (const model::QuerySize& q : memory.demand.query_mix.adopted) {
      mix.push_back({{"size", q.size}, {"weight", q.weight}});
    }
    out["queryMixFor"] = memory.demand.query_mix.adopted_for;
  }
  return out;
}

Memory Recall(const nlohmann::json& status, const model::RateHistory* rates,
              const optimizer::Descriptor& optimizer) {
  Memory out;
  if (rates != nullptr) out.demand = Rebuild(*rates, optimizer);
  if (!status.is_object()) return out;
  auto memory = status.find("memory");
  if (memory == status.end() || !memory->is_object()) return out;
  out.history = RecommendationsFromJson(memory->value("recommendations", nlohmann::json()));
  if (optimizer.memory.slo_guard) out.demand.guard_quiet_until = GuardQuietUntil(*memory);
  if (optimizer.memory.measured_mix) out.demand.query_mix = QueryMix(*memory);
  return out;
}

}  // namespace pipescale::reconciler
