#include "reconciler/memory.h"

namespace pipescale::reconciler {
namespace {

// (1 - kEwmaAlpha)^10 < 0.01: older rates no longer move Loki's EWMA.
constexpr int kEwmaIntervals = 10;

// The demand as if the planner had seen `rates` one interval at a time. `at` stays 0, so the
// first decision adds the current rate as the next interval's.
Demand Rebuild(const model::RateHistory& rates, const optimizer::Descriptor& optimizer) {
  Demand demand;
  for (const auto& [path, series] : rates) {
    if (series.empty()) continue;
    if (const size_t keep = SeriesKept(optimizer); keep > 0) {
      const size_t first = series.size() > keep ? series.size() - keep : 0;
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

}  // namespace

int RebuildIntervals(const optimizer::Descriptor& optimizer) {
  if (const size_t keep = SeriesKept(optimizer); keep > 0) return static_cast<int>(keep);
  if (optimizer.memory.demand_ewma) return kEwmaIntervals;
  return 0;
}

model::StatusMemory MemoryToStatus(const Memory& memory, const optimizer::Descriptor& optimizer) {
  model::StatusMemory out{.recommendations = memory.history};
  if (optimizer.memory.slo_guard && memory.demand.guard_quiet_until > 0) {
    out.guard_quiet_until = memory.demand.guard_quiet_until;
  }
  // A mix still settling starts over after a failover: a minute later at most.
  if (optimizer.memory.measured_mix && !memory.demand.query_mix.adopted.empty()) {
    out.query_mix = memory.demand.query_mix.adopted;
    out.query_mix_for = memory.demand.query_mix.adopted_for;
  }
  if (optimizer.memory.slo_feedback) out.headroom = memory.demand.headroom;
  out.profiles = memory.demand.profiles;
  out.quiet_since = memory.sleep.quiet_since;
  out.held_since = memory.sleep.held_since;
  out.sleeping_paths.assign(memory.sleep.sleeping_paths.begin(), memory.sleep.sleeping_paths.end());
  out.returns = memory.sleep.returns;
  out.awake_ahead = memory.sleep.awake_ahead;
  return out;
}

Memory Recall(const model::PipelineStatus& status, const model::RateHistory* rates,
              const optimizer::Descriptor& optimizer) {
  Memory out;
  if (rates != nullptr) out.demand = Rebuild(*rates, optimizer);
  if (!status.memory) return out;
  const model::StatusMemory& memory = *status.memory;
  out.history = memory.recommendations;
  if (optimizer.memory.slo_guard) {
    out.demand.guard_quiet_until = memory.guard_quiet_until.value_or(0);
  }
  if (optimizer.memory.measured_mix) {
    out.demand.query_mix = {.adopted = memory.query_mix, .adopted_for = memory.query_mix_for};
  }
  if (optimizer.memory.slo_feedback) out.demand.headroom = memory.headroom;
  out.demand.profiles = memory.profiles;
  out.sleep.quiet_since = memory.quiet_since;
  out.sleep.held_since = memory.held_since;
  out.sleep.sleeping_paths.insert(memory.sleeping_paths.begin(), memory.sleeping_paths.end());
  out.sleep.returns = memory.returns;
  out.sleep.awake_ahead = memory.awake_ahead;
  return out;
}

}  // namespace pipescale::reconciler
