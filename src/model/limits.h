// What the operator and the router take from outside, bounded: every limit a reader checks or a
// planner caps at is here, once. The operator parses every tenant's pipeline in one process, so
// no document may exhaust its stack, memory or time; the CRD schema carries the same maximums,
// so the apiserver rejects what the operator would. The README's table of limits is this list.
// Below every module that reads input (api, the router's core, metrics) and the planners, so
// that each derives its bounds from here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pipescale::limits {

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
inline constexpr size_t kMaxPaths = 64;
inline constexpr size_t kMaxPathTasks = 64;     // tasks per path
inline constexpr size_t kMaxQuerySizes = 1024;  // the RM2 example has 100
inline constexpr size_t kMaxMapEntries =
    64;  // requests, limits, nodeSelector, tolerations, metrics

// Numbers. Latencies and SLOs in ms, from 1 us to 1 h.
inline constexpr double kMinMs = 0.001;
inline constexpr double kMaxMs = 3.6e6;
inline constexpr double kMaxCoefficient = 1e6;  // |a|, |b|, |c| of a quadratic profile
// The largest batch: batchSize.max, a profile point's batch, a query size, the rows of a request
// the router counts as one batch, a pool member's largest query.
inline constexpr int kMaxBatch = 4096;
inline constexpr size_t kMaxPoints = kMaxBatch;  // latency points per profile: one per batch
// Replicas of one Deployment: maxReplicas, minWarm, budget.maxReplicas, router replicas, what a
// plan gives a task (the planners cap there).
inline constexpr int kMaxReplicas = 10000;
// Nodes of one group in a simulated cluster's nodes file (pipescale simulate --nodes).
inline constexpr int kMaxNodes = 10000;
// What the cluster counts and reports back (pods, nodes, a pipeline's replicas summed over its
// Deployments): what an int holds.
inline constexpr std::int64_t kMaxCount = INT32_MAX;
inline constexpr double kMaxCostPerHour = 1e4;    // of one replica
inline constexpr double kMaxBudgetPerHour = 1e8;  // budget.costPerHour
inline constexpr double kMaxStartupSeconds = 86400;
inline constexpr double kMaxRatio = 100;   // next[].ratio, multiplicativeFactor
inline constexpr double kMaxWeight = 1e6;  // paths[].weight, querySizes[].weight
// Requests per second the planners take (spec.minRate, a measured rate, a what-if load).
inline constexpr double kMaxRateRps = 1e9;
// A load trace (pipescale simulate --trace): a month, and a million requests a second at any time.
inline constexpr double kMaxTraceSeconds = 31 * 86400.0;
inline constexpr double kMaxTraceRps = 1e6;
// A rate history (pipescale plan --history) is read up to this size and this many steps.
inline constexpr size_t kMaxHistoryBytes = 16 << 20;
inline constexpr size_t kMaxHistorySteps = 100000;
inline constexpr double kMinIntervalSeconds = 1;
inline constexpr double kMaxIntervalSeconds = 3600;
inline constexpr double kMaxHorizonSeconds = 86400;
inline constexpr double kMaxWindowSeconds = 3600;  // behavior stabilizationWindowSeconds
inline constexpr double kMaxBurstAllowance = 10;   // behavior.scaleUp.burstAllowance
// A task's arrivals' index of dispersion (routing/dispersion.h) the planners take: past it a load
// comes in rare lumps that no queue model sizes for.
inline constexpr double kMaxDispersion = 50;
inline constexpr double kMinProfileWindowSeconds = 30;     // spec.profiles.window
inline constexpr std::int64_t kMaxMinBatches = 1'000'000;  // spec.profiles.minBatches
// MArk plans step by step up to its forecast horizon and the slowest startup, each at most
// this many intervals ahead.
inline constexpr int kMaxPlanningSteps = 1440;
// router.maxBodyBytes: room for a small request, and at most 1 GiB (the router holds a body whole).
inline constexpr std::int64_t kMinBodyBytes = 1024;
inline constexpr std::int64_t kMaxBodyBytes = std::int64_t{1} << 30;

// What the operator writes for itself and reads back (the status, the routing ConfigMap's plan):
// items of one list (tables, pools, members, batches: far beyond any plan), and the magnitude of
// any number (no rate, cost, time or latency comes near; beyond it the status's rounding to
// 1/10000 would neither keep a number nor give back the same one when it rounds it again).
inline constexpr size_t kMaxPlanItems = 100'000;
inline constexpr double kMaxMagnitude = 1e11;

}  // namespace pipescale::limits
