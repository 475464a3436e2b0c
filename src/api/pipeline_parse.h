// Parsing and validating an InferencePipeline (pipescale.io/v1alpha1) from YAML or JSON. Every
// problem is reported at once, each naming its field path, e.g.
// `spec.tasks[1].next[0].task: unknown task "clasify"`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/pipeline.h"

namespace pipescale::api {

// What an InferencePipeline may hold. The operator parses every tenant's pipeline in one
// process, so no document may exhaust its stack, memory or time; the CRD schema carries the
// same maximums, so the apiserver rejects what the operator would. The README's table of limits
// is this list.
namespace limits {

// The document: its text (the apiserver stores objects up to about 1.5 MiB), how deep it
// nests, and how many values it holds once YAML aliases are expanded (as many as 1 MiB can
// spell out without aliases: `[0,0,...]` takes 2 bytes a value).
inline constexpr size_t kMaxDocumentBytes = 1 << 20;
inline constexpr int kMaxDepth = 64;
inline constexpr size_t kMaxValues = 1 << 19;
// Strings other than names (which are DNS labels of at most 63 characters).
inline constexpr size_t kMaxStringBytes = 4096;
// Reported problems; the rest are counted in one last line.
inline constexpr size_t kMaxErrors = 100;

// Counts.
inline constexpr size_t kMaxHardwareClasses = 16;
inline constexpr size_t kMaxTasks = 64;
inline constexpr size_t kMaxEdges = 64;     // next[] per task
inline constexpr size_t kMaxVariants = 16;  // per task
inline constexpr size_t kMaxProfiles = 16;  // per variant: one per hardware class
inline constexpr size_t kMaxPoints = 4096;  // latency points per profile
inline constexpr size_t kMaxPaths = 64;
inline constexpr size_t kMaxPathTasks = 64;     // tasks per path
inline constexpr size_t kMaxQuerySizes = 1024;  // the RM2 example has 100
inline constexpr size_t kMaxMapEntries =
    64;  // requests, limits, nodeSelector, tolerations, metrics

// Numbers. Latencies and SLOs in ms, from 1 us to 1 h.
inline constexpr double kMinMs = 0.001;
inline constexpr double kMaxMs = 3.6e6;
inline constexpr double kMaxCoefficient = 1e6;       // |a|, |b|, |c| of a quadratic profile
inline constexpr int kMaxBatch = 4096;               // batchSize.max, point batches, query sizes
inline constexpr std::int64_t kMaxReplicas = 10000;  // maxReplicas, minWarm, budget.maxReplicas
inline constexpr double kMaxCostPerHour = 1e4;       // of one replica
inline constexpr double kMaxBudgetPerHour = 1e8;     // budget.costPerHour
inline constexpr double kMaxStartupSeconds = 86400;
inline constexpr double kMaxRatio = 100;   // next[].ratio, multiplicativeFactor
inline constexpr double kMaxWeight = 1e6;  // paths[].weight, querySizes[].weight
inline constexpr double kMinIntervalSeconds = 1;
inline constexpr double kMaxIntervalSeconds = 3600;
inline constexpr double kMaxHorizonSeconds = 86400;
inline constexpr double kMaxWindowSeconds = 3600;       // behavior stabilizationWindowSeconds
inline constexpr double kMinProfileWindowSeconds = 30;  // spec.profiles.window
// MArk plans step by step up to its forecast horizon and the slowest startup, each at most
// this many intervals ahead.
inline constexpr int kMaxPlanningSteps = 1440;
// router.maxBodyBytes: room for a small request, and at most 1 GiB (the router holds a body whole).
inline constexpr std::int64_t kMinBodyBytes = 1024;
inline constexpr std::int64_t kMaxBodyBytes = std::int64_t{1} << 30;

}  // namespace limits

struct FieldError {
  std::string path;  // e.g. spec.paths[0].sloMs; empty for the document itself
  std::string message;

  std::string ToString() const { return path.empty() ? message : path + ": " + message; }
  bool operator==(const FieldError&) const = default;
};

struct ParsedPipeline {
  std::optional<model::Pipeline> pipeline;  // set exactly when errors is empty
  std::vector<FieldError> errors;
};

// Parses an InferencePipeline custom resource. Latency profiles given as points are fitted
// here (quadratic by robust regression, or kept as a table), so the model holds d(b) ready.
ParsedPipeline ParsePipeline(std::string_view text);

// Reads and parses a file; a file that cannot be read is one error with an empty path. At most
// limits::kMaxDocumentBytes + 1 bytes are read (the parser refuses more).
ParsedPipeline ParsePipelineFile(const std::string& file);

// spec.slo.latencyModel's names and values, for the parser and for `pipescale plan
// --latency-model`.
const std::vector<std::pair<const char*, model::LatencyModel>>& LatencyModelNames();

// What a valid pipeline lacks for `optimizer` when it is planned with another optimizer than
// its spec.optimizer (`pipescale plan --optimizer`): validation checked the pipeline for its
// own. Empty when `optimizer` can plan it. The paths rule is the caller's (Descriptor).
std::vector<FieldError> CheckPlannableBy(const model::Pipeline& pipeline,
                                         std::string_view optimizer);

}  // namespace pipescale::api
