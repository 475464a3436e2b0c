// Random FA2 instances for property tests and benchmarks: chains, trees and fork-join DAGs of
// 2-8 DNNs with quadratic profiles, batch limits up to 32, SLOs from tight to loose; with
// options, Loki instances: several variants per task and a cluster size.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/pipeline.h"

namespace pipescale::testing {

enum class Shape { kChain, kTree, kForkJoin };

struct Instance {
  std::string label;  // shape, size and seed, to reproduce a failure
  model::Pipeline pipeline;
  model::Workload workload;
};

struct InstanceOptions {
  Shape shape = Shape::kChain;
  int dnns = 4;
  int max_batch = 16;
  int hardware_classes = 1;  // 2 adds a faster, dearer class
  // Loki: variants per task. Beyond the first, each is faster and less accurate than the one
  // before, and every variant emits a random number of requests per request (its factor).
  int variants = 1;
  std::optional<int> max_replicas;  // spec.budget.maxReplicas: Loki's cluster size
};

// Deterministic for a given seed and options.
Instance Generate(std::uint64_t seed, const InstanceOptions& options);

// `count` instances cycling through shapes, sizes 2..8, batch limits {4, 8, 16, 32}, and one
// or two hardware classes.
std::vector<Instance> GenerateSuite(int count, std::uint64_t seed);

}  // namespace pipescale::testing
