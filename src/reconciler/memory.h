// What one decision hands to the next, and how a new leader (or a restarted operator) gets it
// back: the stabilization steps, the SLO guard's quiet time, FA2's headroom and Kairos's adopted
// query-size mix from the status, where every decision keeps them; the rates the planners smooth or
// forecast from, from Prometheus.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "model/metrics_snapshot.h"
#include "model/status.h"
#include "optimizer/registry.h"
#include "reconciler/demand.h"
#include "reconciler/idle.h"
#include "reconciler/stabilize.h"

namespace pipescale::reconciler {

struct Memory {
  std::vector<Recommendation> history;  // stabilization steps, oldest first
  Demand demand;
  SleepMemory sleep;  // spec.scaleToZero (reconciler/idle.h)

  bool operator==(const Memory&) const = default;
};

// How many past intervals of path rates rebuild the optimizer's memory: MArk's whole series,
// Loki's scale-down window of rates (kBurstWindow, which also leaves its EWMA's oldest rate
// under 1%), else what the EWMA needs for that; 0 when it keeps none.
int RebuildIntervals(const optimizer::Descriptor& optimizer);

// status.memory: what a new leader cannot rebuild from Prometheus, bounded in size.
model::StatusMemory MemoryToStatus(const Memory& memory, const optimizer::Descriptor& optimizer);

// The memory a new leader starts from: `status` as the last leader left it (api::ReadStatus
// has dropped what it could not read), and the path rates over RebuildIntervals (absent when
// there is nothing to rebuild or Prometheus could not say).
Memory Recall(const model::PipelineStatus& status, const model::RateHistory* rates,
              const optimizer::Descriptor& optimizer);

}  // namespace pipescale::reconciler
