// What the operator observed of a pipeline's load at one moment, as read from Prometheus.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/pipeline.h"

namespace pipescale::model {

// What the router's data plane did, as its metrics say (over the last minute): informative,
// never a reason to hold or change a plan.
struct DataPlaneSnapshot {
  std::map<std::string, double> drops_rps;     // by reason, every task's
  std::map<std::string, double> shed_rps;      // by "path/reason": refused at the door
  double reroutes_rps = 0;                     // late requests sent to a faster backup variant
  std::map<std::string, double> spill_share;   // by task: of its calls, sent to the burst class
  std::map<std::string, double> pool_waiting;  // by task: requests in Kairos's queue (most of any
                                               // router)
  std::map<std::string, double> batch_rows;    // by task: mean rows of the batches formed
  std::map<std::string, double> variant_rps;   // by "task/variant": calls answered 200

  bool operator==(const DataPlaneSnapshot&) const = default;
};

// The batches of one size the router saw served over the profiles' window, and their mean
// service time (past the pod's queue).
struct BatchTiming {
  double batches = 0;
  double mean_ms = 0;

  bool operator==(const BatchTiming&) const = default;
};

// Measured batch times per profile, by batch rows.
using BatchTimings = std::map<ProfileKey, std::map<int, BatchTiming>>;

struct MetricsSnapshot {
  std::map<std::string, double> path_rates_rps;   // measured rate per execution path
  std::map<std::string, double> path_latency_ms;  // measured tail latency per path
  // Of each path's requests over the last minute, the share not answered 200 (refused at the
  // door, dropped at the deadline, failed). Absent: none, or no router to count them.
  std::map<std::string, double> path_error_share;
  std::optional<double> arrival_rate_rps;  // total rate into the pipeline
  // Measured requests emitted per request served, by "task/variant" (Loki). Optional: the
  // spec's multiplicativeFactor stands in where a variant has no measurement.
  std::map<std::string, double> multiplicative_factors;
  // The router's queries by size over the querySizes window (Kairos): cumulative counts by
  // bucket upper bound (+Inf as infinity). Optional: the spec's querySizes stand in.
  std::map<double, double> query_sizes;
  // Series that were absent or stale, e.g. `pathRate{path="car-qa"}`. A missing value is
  // never read as 0: the operator keeps its current plan instead.
  std::vector<std::string> missing;
  std::optional<DataPlaneSnapshot> data_plane;  // read when the pipeline runs a router
  // The router's batch times (spec.profiles.learn not Off); absent series are no data, never
  // "missing": a profile is corrected only where something was measured.
  BatchTimings batch_timings;
  // Requests the router holds at its door for a task with no Ready pod, by path ("" for those
  // that name none): demand not yet in any rate, and what wakes a sleeping path. Absent series
  // are none held (the router exports one per path once it has read the pipeline).
  std::map<std::string, double> door_waiting;
  // The mean busy share of a Ready model pod over the last 15 s, by "task/hardware class" (the
  // utilisation HPA reads; read where the optimizer does). Absent: no reading, never 0.
  std::map<std::string, double> utilization;
  // By task: the index of dispersion of its per-second arrivals the routers measured (at least
  // 1). Absent: planned as Poisson arrivals, never a reason to hold.
  std::map<std::string, double> task_dispersion;
  // By path: its arrival rate over the routers' last few seconds (routing/recent_rate.h), the
  // first sign of a burst. Absent: no sign, never a reason to hold.
  std::map<std::string, double> recent_path_rates_rps;

  bool Complete() const { return missing.empty(); }
  bool operator==(const MetricsSnapshot&) const = default;
};

// Per path, its rate at past steps of the pipeline's interval, oldest first: what a restarted
// operator rebuilds the planners' memory from.
using RateHistory = std::map<std::string, std::vector<double>>;

}  // namespace pipescale::model
