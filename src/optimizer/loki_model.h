// Loki's model of a pipeline as its MILPs see it: the augmented graph's vertices (task,
// variant) with their configs, its variant paths, and the MILP's columns. Internal to Loki's
// files (loki.cc, loki_budgets.cc).
#pragma once

#include <map>
#include <optional>
#include <vector>

namespace pipescale::optimizer::loki {

// One way to run a variant: hardware class and batch size, with d(b) and the throughput of
// one replica.
struct Config {
  int hardware_class = 0;
  int batch = 1;
  double ms = 0;
  double rps = 0;
};

// A vertex of the augmented graph: one (task, variant).
struct Vertex {
  int task = 0;
  int variant = 0;
  double accuracy = 1;  // normalised to the task's most accurate variant
  double factor = 1;    // requests emitted per request served
  std::vector<Config> configs;
  int max_replicas = 1;  // a bound for the MILP: every request of every path through here
  std::map<int, int> running_batch;  // by hardware class: the batch applied there now
};

// A root-to-sink path of the augmented graph: an execution path with one variant per task.
struct VariantPath {
  int path = 0;
  std::vector<int> vertices;
  std::vector<double> load;  // requests at each vertex per request entering the path
  double accuracy = 1;
};

struct Instance {
  // The SLO a path's batch times may sum to: a request waits for its batch to fill (at most one
  // batch time, the router's wait) and runs it: half the SLO, the paper's rule. Under the tail
  // model it may also wait behind one batch at the p-th percentile: a third.
  double batch_times_per_slo = 2;
  std::vector<Vertex> vertices;
  std::vector<VariantPath> paths;
  std::vector<double> rates;  // per execution path
  // Per execution path: the batch times its tasks may sum to, its SLO over batch_times_per_slo;
  // none without load, or when even the fastest configs exceed it (it can carry nothing).
  std::vector<std::optional<double>> budgets;
  std::vector<std::vector<int>> path_tasks;  // per execution path, task indices
  double total_rate = 0;
  std::optional<int> cluster_size;
};

enum class Step { kHardwareScaling, kAccuracyScaling, kOverloaded };

struct Columns {
  std::vector<std::vector<int>> z, n;  // per vertex, per config
  std::map<int, int> budget;           // per task: the batch time its configs may take
  std::vector<int> share;              // per variant path
  std::vector<int> served;             // per execution path (step 3), else -1
};

}  // namespace pipescale::optimizer::loki
