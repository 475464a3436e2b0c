// What `pipescale profile` prints: the measured batch sizes, the latencyMs written from them
// and its fit, as a table, as JSON, or as a profiles entry to paste into a pipeline. Pure.
#pragma once

#include <string>
#include <vector>

#include "profile/job.h"
#include "profile/points.h"
#include "profile/stats.h"

namespace pipescale::profile {

struct Report {
  Target target;
  std::string address;
  std::string model;
  std::string pod;     // the pod measured through --deployment; "" for --address
  std::string inputs;  // DescribeInputs
  Statistic statistic = Statistic::kMean;
  int requests = 0;  // measured per batch size
  int warmup = 0;
  std::vector<MeasuredBatch> batches;
  Latency latency;
  std::vector<std::string> notes;  // the caller's; the renderers add the measurements' own
};

// What the measurements themselves call for: whether queueing was subtracted, and sizes whose
// p99 is far above their p50 (the planners take a batch's latency as fixed).
std::vector<std::string> MeasurementNotes(const Report& report);

std::string ReportTable(const Report& report);
std::string ReportJson(const Report& report);
// A profiles[] entry: "- hardwareClass: C\n  latencyMs: {points: ...}" after a comment line.
std::string ReportYaml(const Report& report);

}  // namespace pipescale::profile
