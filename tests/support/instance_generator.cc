#include "support/instance_generator.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

namespace pipescale::testing {
namespace {

const char* ShapeName(Shape s) {
  switch (s) {
    case Shape::kChain:
      return "chain";
    case Shape::kTree:
      return "tree";
    case Shape::kForkJoin:
      return "forkjoin";
  }
  return "?";
}

model::QuadraticLatency Scaled(const model::QuadraticLatency& q, double by) {
  return {.a = q.a * by, .b = q.b * by, .c = q.c * by};
}

// d(b) = q on the base class and, with two classes, q / speedup on the fast one.
std::vector<model::Profile> Profiles(const model::QuadraticLatency& q, int hardware_classes,
                                     double speedup) {
  std::vector<model::Profile> out{{.hardware_class = "base", .latency = {.quadratic = q}}};
  if (hardware_classes > 1) {
    const model::QuadraticLatency f{.a = q.a / speedup, .b = q.b / speedup, .c = q.c / speedup};
    out.push_back({.hardware_class = "fast", .latency = {.quadratic = f}});
  }
  return out;
}

// Loki's trade: each further variant 20-65% faster and 3-20% less accurate than the one
// before, so that less accurate variants are what carries more load. Every variant emits
// 0.5-2 requests per request, so a variant choice also changes the load downstream. Draws
// only here, so instances with one variant stay what they always were.
void AddFasterVariants(const InstanceOptions& options, double speedup, std::mt19937_64& rng,
                       model::Task& task) {
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<>(lo, hi)(rng);
  };
  model::Variant first = task.variants.front();
  first.name = "v0";
  first.multiplicative_factor = uniform(0.5, 2.0);
  task.variants = {first};
  model::QuadraticLatency q = first.profiles.front().latency.quadratic;
  for (int k = 1; k < options.variants; ++k) {
    const model::Variant& before = task.variants.back();
    q = Scaled(q, uniform(0.35, 0.8));
    task.variants.push_back({.name = "v" + std::to_string(k),
                             .accuracy = before.accuracy * uniform(0.8, 0.97),
                             .multiplicative_factor = uniform(0.5, 2.0),
                             .max_batch = options.max_batch,
                             .profiles = Profiles(q, options.hardware_classes, speedup)});
  }
}

}  // namespace

Instance Generate(std::uint64_t seed, const InstanceOptions& options) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<>(lo, hi)(rng);
  };
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<>(lo, hi)(rng); };
  const int n = options.dnns;

  Instance inst;
  inst.label = std::string(ShapeName(options.shape)) + "/n" + std::to_string(n) + "/b" +
               std::to_string(options.max_batch) + "/hw" +
               std::to_string(options.hardware_classes) +
               (options.variants > 1 ? "/v" + std::to_string(options.variants) : "") +
               (options.max_replicas ? "/S" + std::to_string(*options.max_replicas) : "") +
               "/seed" + std::to_string(seed);
  model::PipelineSpec& spec = inst.pipeline.spec;
  inst.pipeline.name = "generated";
  spec.budget.max_replicas = options.max_replicas;
  spec.hardware_classes.push_back({.name = "base", .cost_per_hour = 1.0});
  if (options.hardware_classes > 1) {
    spec.hardware_classes.push_back({.name = "fast", .cost_per_hour = 2.5});
  }

  // Edges by shape; preds[v] lists u for every edge u -> v.
  std::vector<std::set<int>> succ(n);
  for (int v = 1; v < n; ++v) {
    switch (options.shape) {
      case Shape::kChain:
        succ[v - 1].insert(v);
        break;
      case Shape::kTree:
        succ[pick(0, v - 1)].insert(v);
        break;
      case Shape::kForkJoin: {
        succ[pick(0, v - 1)].insert(v);
        if (v >= 2 && uniform(0, 1) < 0.6) succ[pick(0, v - 1)].insert(v);  // a join
        break;
      }
    }
  }

  std::vector<double> d1(n);
  for (int i = 0; i < n; ++i) {
    model::Task task;
    task.name = "dnn" + std::to_string(i);
    for (int s : succ[i]) task.next.push_back({.task = "dnn" + std::to_string(s), .ratio = 1});
    d1[i] = uniform(5, 300);
    const double fixed = uniform(0.1, 0.85);  // share of a batch's time that does not grow with b
    const double curve = uniform(0, 0.01);
    const model::QuadraticLatency q{
        .a = d1[i] * curve, .b = d1[i] * (1 - fixed - curve), .c = d1[i] * fixed};
    const double speedup = options.hardware_classes > 1 ? uniform(1.3, 3.0) : 1;
    task.variants.push_back({.name = "v",
                             .accuracy = 1,
                             .max_batch = options.max_batch,
                             .profiles = Profiles(q, options.hardware_classes, speedup)});
    if (options.variants > 1) AddFasterVariants(options, speedup, rng, task);
    spec.tasks.push_back(std::move(task));
  }

  // Paths: random walks along edges, from a source (or sometimes any DNN) to a sink (or
  // sometimes earlier); SLO = b = 1 latency x a factor between tight and the paper's x5.
  std::set<std::vector<int>> walks;
  const int wanted = options.shape == Shape::kChain ? pick(1, 2) : pick(2, 5);
  for (int attempt = 0; attempt < 40 && static_cast<int>(walks.size()) < wanted; ++attempt) {
    int u = uniform(0, 1) < 0.8 ? 0 : pick(0, n - 1);
    std::vector<int> walk = {u};
    while (!succ[u].empty() && uniform(0, 1) < 0.9) {
      auto it = succ[u].begin();
      std::advance(it, pick(0, static_cast<int>(succ[u].size()) - 1));
      u = *it;
      walk.push_back(u);
    }
    walks.insert(walk);
  }
  int p = 0;
  for (const auto& walk : walks) {
    model::Path path{.name = "path" + std::to_string(p++)};
    double base = 0;
    for (int u : walk) {
      path.tasks.push_back("dnn" + std::to_string(u));
      base += d1[u];
    }
    // One path in twenty gets an SLO below its b = 1 latency: usually infeasible.
    const double factor = uniform(0, 1) < 0.05 ? uniform(0.7, 0.98) : uniform(1.2, 6.0);
    path.slo_ms = std::round(base * factor);
    inst.workload.path_rates_rps[path.name] = std::round(uniform(1, 60) * 10) / 10;
    spec.paths.push_back(std::move(path));
  }
  return inst;
}

std::vector<Instance> GenerateSuite(int count, std::uint64_t seed) {
  constexpr Shape kShapes[] = {Shape::kChain, Shape::kTree, Shape::kForkJoin};
  constexpr int kBatches[] = {4, 8, 16, 32};
  std::vector<Instance> suite;
  for (int i = 0; i < count; ++i) {
    const InstanceOptions options{.shape = kShapes[i % 3],
                                  .dnns = 2 + (i / 3) % 7,
                                  .max_batch = kBatches[(i / 21) % 4],
                                  .hardware_classes = (i % 5 == 4) ? 2 : 1};
    suite.push_back(Generate(seed + static_cast<std::uint64_t>(i) * 7919, options));
  }
  return suite;
}

}  // namespace pipescale::testing
