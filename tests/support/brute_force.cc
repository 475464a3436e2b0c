#include "support/brute_force.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <vector>

#include "optimizer/tail.h"
#include "support/simplex.h"

namespace pipescale::testing {

std::optional<BruteForceResult> BruteForce(const model::Pipeline& pipeline,
                                           const model::Workload& workload) {
  const auto& spec = pipeline.spec;
  std::map<std::string, double> rate;
  for (const auto& path : spec.paths) {
    for (const auto& t : path.tasks) rate[t] += workload.path_rates_rps.at(path.name);
  }
  struct Option {
    double latency;
    std::int64_t replicas;
    double cost;
  };
  std::vector<std::vector<Option>> options(spec.tasks.size());
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const auto& task = spec.tasks[i];
    const double lambda = rate[task.name];
    const model::Variant& v = task.MostAccurateVariant();
    for (const auto& profile : v.profiles) {
      const double price =
          spec.hardware_classes[pipeline.HardwareClassIndex(profile.hardware_class)].cost_per_hour;
      for (int b = 1; b <= (lambda > 0 ? profile.latency.MaxBatch(v.max_batch) : 1); ++b) {
        const double d = profile.latency.Ms(b);
        const double q = b == 1 ? 0 : 1000.0 * (b - 1) / lambda;
        std::int64_t n = static_cast<std::int64_t>(std::ceil(lambda * d / (1000.0 * b) - 1e-9));
        if (n < 1) n = 1;
        if (spec.slo.model == model::LatencyModel::kMean) {
          options[i].push_back({d + q, n, n * price});
          continue;
        }
        // Every replica count from the fewest on, until nothing waits behind a batch.
        for (std::int64_t m = n; m <= 2 * n + 64; ++m) {
          const optimizer::TailLatency tail = optimizer::TaskTailLatency(
              {.rate_rps = lambda,
               .replicas = static_cast<int>(m),
               .batch = b,
               .exec_ms = d,
               .exec_one_ms = profile.latency.Ms(1),
               .formation = v.RouterBatches() ? optimizer::BatchFormation::kRouter
                                              : optimizer::BatchFormation::kServer},
              spec.slo.percentile);
          if (!std::isfinite(tail.TotalMs())) continue;
          options[i].push_back({tail.TotalMs(), m, m * price});
          if (tail.queue_ms <= 0) break;
        }
      }
    }
    // Options beaten on latency, replicas and cost by another cannot be in any optimum: left
    // out, so that the search stays small.
    std::vector<Option> kept;
    for (const Option& o : options[i]) {
      const bool beaten = std::any_of(options[i].begin(), options[i].end(), [&](const Option& x) {
        return x.latency <= o.latency && x.replicas <= o.replicas && x.cost <= o.cost &&
               (x.latency < o.latency || x.replicas < o.replicas || x.cost < o.cost);
      });
      if (!beaten) kept.push_back(o);
    }
    if (kept.empty() && !options[i].empty()) kept.push_back(options[i].front());
    options[i] = std::move(kept);
  }
  std::optional<BruteForceResult> best;
  std::vector<double> latency(spec.tasks.size());
  std::function<void(size_t, std::int64_t, double)> visit = [&](size_t i, std::int64_t replicas,
                                                                double cost) {
    if (i == spec.tasks.size()) {
      for (const auto& path : spec.paths) {
        double total = 0;
        for (const auto& t : path.tasks) total += latency[pipeline.TaskIndex(t)];
        if (total > path.slo_ms + 1e-9) return;
      }
      if (!best || replicas < best->replicas ||
          (replicas == best->replicas && cost < best->cost_per_hour - 1e-9)) {
        best = BruteForceResult{replicas, cost};
      }
      return;
    }
    for (const Option& o : options[i]) {
      latency[i] = o.latency;
      visit(i + 1, replicas + o.replicas, cost + o.cost);
    }
  };
  visit(0, 0, 0);
  return best;
}

namespace {

struct LokiConfig {
  int hardware_class = 0;
  double ms = 0;
  double rps = 0;  // of one replica
  double price = 0;
};

// One (task, variant) and what the search has it run: a config, or -1 for nothing.
struct LokiVariant {
  int task = 0;
  const model::Variant* variant = nullptr;
  double accuracy = 1;  // normalised by the task's most accurate variant
  std::vector<LokiConfig> configs;
  int config = -1;
  int replicas = 0;
};

// A chain of running variants along one path: a column of the shares LP.
struct Chain {
  int path = 0;
  std::vector<int> variants;  // indices into the search's variants
  std::vector<double> load;   // requests at each position per request entering the path
  double ms = 0;
  double accuracy = 1;
};

// max served . x, then accuracy . x, subject to a x <= b, x >= 0: x are the chains' shares.
struct SharesLp {
  std::vector<std::vector<double>> a;
  std::vector<double> b, served, accuracy;
};

double EdgeRatio(const model::Task& from, const std::string& to) {
  for (const model::Edge& e : from.next) {
    if (e.task == to) return e.ratio;
  }
  return 1;
}

std::vector<int> LokiBatches(int max_batch) {
  std::vector<int> out;
  for (int b = 1; b < max_batch; b *= 2) out.push_back(b);
  out.push_back(max_batch);
  return out;
}

class LokiSearch {
 public:
  LokiSearch(const model::Pipeline& pipeline, const model::Workload& workload);
  ServedResult Run();

 private:
  void AddVariants(const std::vector<double>& half_slo);
  void Visit(size_t i);
  bool WithinLimits() const;
  bool CanGrow();
  void Evaluate();
  std::vector<int> MarkRunning();
  bool EveryCombinationFits() const;
  void Extend(Chain& prefix, std::vector<Chain>& out) const;
  SharesLp MakeLp(const std::vector<Chain>& chains, const std::vector<int>& row_of) const;

  const model::Pipeline& pipeline_;
  const model::PipelineSpec& spec_;
  std::vector<double> rates_;  // per path
  double total_ = 0;
  std::vector<LokiVariant> variants_;
  std::vector<std::vector<int>> running_;  // per task, filled for each evaluation
  double best_served_ = -1, best_accuracy_ = 0;
};

LokiSearch::LokiSearch(const model::Pipeline& pipeline, const model::Workload& workload)
    : pipeline_(pipeline), spec_(pipeline.spec) {
  std::vector<double> half_slo(spec_.tasks.size(), -1);  // loosest over the loaded paths
  for (const auto& path : spec_.paths) {
    auto it = workload.path_rates_rps.find(path.name);
    rates_.push_back(it == workload.path_rates_rps.end() ? 0 : std::max(0.0, it->second));
    total_ += rates_.back();
    if (rates_.back() <= 0) continue;
    for (const auto& t : path.tasks) {
      double& h = half_slo[pipeline.TaskIndex(t)];
      h = std::max(h, path.slo_ms / 2);
    }
  }
  AddVariants(half_slo);
}

// Every variant of every task on a loaded path, with the configs that fit half a SLO alone.
void LokiSearch::AddVariants(const std::vector<double>& half_slo) {
  for (size_t i = 0; i < spec_.tasks.size(); ++i) {
    if (half_slo[i] < 0) continue;
    double best = 0;
    for (const auto& v : spec_.tasks[i].variants) best = std::max(best, v.accuracy);
    for (const auto& v : spec_.tasks[i].variants) {
      LokiVariant lv{.task = static_cast<int>(i), .variant = &v, .accuracy = v.accuracy / best};
      for (const auto& profile : v.profiles) {
        const int hw = pipeline_.HardwareClassIndex(profile.hardware_class);
        for (int b : LokiBatches(v.max_batch)) {
          const double ms = profile.latency.Ms(b);
          if (ms > half_slo[i] + 1e-9) continue;
          lv.configs.push_back({hw, ms, 1000.0 * b / ms, spec_.hardware_classes[hw].cost_per_hour});
        }
      }
      variants_.push_back(std::move(lv));
    }
  }
}

ServedResult LokiSearch::Run() {
  if (total_ <= 0) return {};
  Visit(0);
  const double served = std::max(best_served_, 0.0);
  return {served, served > 0 ? best_accuracy_ / served : 1};
}

void LokiSearch::Visit(size_t i) {
  if (i == variants_.size()) {
    // With a replica to spare, the same plan with one more serves at least as much.
    if (!CanGrow()) Evaluate();
    return;
  }
  LokiVariant& v = variants_[i];
  Visit(i + 1);
  for (size_t k = 0; k < v.configs.size(); ++k) {
    v.config = static_cast<int>(k);
    for (v.replicas = 1; WithinLimits(); ++v.replicas) Visit(i + 1);
  }
  v.config = -1;
  v.replicas = 0;
}

bool LokiSearch::WithinLimits() const {
  int total = 0;
  double cost = 0;
  std::map<int, int> per_class;
  for (const LokiVariant& v : variants_) {
    if (v.config < 0) continue;
    const LokiConfig& c = v.configs[v.config];
    total += v.replicas;
    cost += v.replicas * c.price;
    per_class[c.hardware_class] += v.replicas;
  }
  if (total > *spec_.budget.max_replicas) return false;
  if (spec_.budget.cost_per_hour && cost > *spec_.budget.cost_per_hour + 1e-9) return false;
  for (const auto& [hw, n] : per_class) {
    const auto& limit = spec_.hardware_classes[hw].max_replicas;
    if (limit && n > *limit) return false;
  }
  return true;
}

bool LokiSearch::CanGrow() {
  bool grows = false;
  for (LokiVariant& v : variants_) {
    if (v.config < 0 || grows) continue;
    ++v.replicas;
    grows = WithinLimits();
    --v.replicas;
  }
  return grows;
}

void LokiSearch::Extend(Chain& prefix, std::vector<Chain>& out) const {
  const model::Path& path = spec_.paths[prefix.path];
  const size_t j = prefix.variants.size();
  if (j == path.tasks.size()) {
    if (prefix.ms <= path.slo_ms / 2 + 1e-9) out.push_back(prefix);
    return;
  }
  double load = 1;
  if (j > 0) {
    const LokiVariant& before = variants_[prefix.variants.back()];
    load = prefix.load.back() * before.variant->multiplicative_factor *
           EdgeRatio(spec_.tasks[before.task], path.tasks[j]);
  }
  for (int i : running_[pipeline_.TaskIndex(path.tasks[j])]) {
    const LokiVariant& v = variants_[i];
    Chain next = prefix;
    next.variants.push_back(i);
    next.load.push_back(load);
    next.ms += v.configs[v.config].ms;
    next.accuracy *= v.accuracy;
    Extend(next, out);
  }
}

// Which variants run, per task, and the capacity row of each running one (-1: none).
std::vector<int> LokiSearch::MarkRunning() {
  running_.assign(spec_.tasks.size(), {});
  std::vector<int> row_of(variants_.size(), -1);
  int rows = 0;
  for (size_t i = 0; i < variants_.size(); ++i) {
    if (variants_[i].config < 0) continue;
    running_[variants_[i].task].push_back(static_cast<int>(i));
    row_of[i] = rows++;
  }
  return row_of;
}

// The shares LP of one allocation: rows are the running variants' capacities, then each
// path's shares summing to at most 1; served demand first, then accuracy.
SharesLp LokiSearch::MakeLp(const std::vector<Chain>& chains,
                            const std::vector<int>& row_of) const {
  const size_t rows = static_cast<size_t>(*std::max_element(row_of.begin(), row_of.end()) + 1);
  SharesLp lp{.a = std::vector<std::vector<double>>(rows + spec_.paths.size(),
                                                    std::vector<double>(chains.size(), 0)),
              .b = std::vector<double>(rows + spec_.paths.size(), 1),
              .served = std::vector<double>(chains.size()),
              .accuracy = std::vector<double>(chains.size())};
  for (size_t i = 0; i < variants_.size(); ++i) {
    const LokiVariant& v = variants_[i];
    if (row_of[i] >= 0) lp.b[row_of[i]] = v.replicas * v.configs[v.config].rps;
  }
  for (size_t col = 0; col < chains.size(); ++col) {
    const Chain& q = chains[col];
    for (size_t j = 0; j < q.variants.size(); ++j) {
      lp.a[row_of[q.variants[j]]][col] += rates_[q.path] * q.load[j];
    }
    lp.a[rows + q.path][col] = 1;
    lp.served[col] = rates_[q.path] / total_;
    lp.accuracy[col] = lp.served[col] * q.accuracy;
  }
  return lp;
}

// Loki's latency rule: on every loaded path that its fastest configs fit, the slowest running
// batch time of each of its tasks, summed, within half its SLO; any running variant may then
// pass a request to any running variant of the next task.
bool LokiSearch::EveryCombinationFits() const {
  for (size_t p = 0; p < spec_.paths.size(); ++p) {
    if (rates_[p] <= 0) continue;
    double slowest_running = 0, fastest = 0;
    for (const std::string& name : spec_.paths[p].tasks) {
      const int t = pipeline_.TaskIndex(name);
      double slowest = 0, fast = std::numeric_limits<double>::infinity();
      for (const LokiVariant& v : variants_) {
        if (v.task != t) continue;
        for (const LokiConfig& c : v.configs) fast = std::min(fast, c.ms);
        if (v.config >= 0) slowest = std::max(slowest, v.configs[v.config].ms);
      }
      slowest_running += slowest;
      fastest += fast;
    }
    const double half = spec_.paths[p].slo_ms / 2 + 1e-9;
    if (fastest <= half && slowest_running > half) return false;
  }
  return true;
}

void LokiSearch::Evaluate() {
  if (!EveryCombinationFits()) return;
  const std::vector<int> row_of = MarkRunning();
  std::vector<Chain> chains;
  for (size_t p = 0; p < spec_.paths.size(); ++p) {
    if (rates_[p] <= 0) continue;
    Chain empty{.path = static_cast<int>(p)};
    Extend(empty, chains);
  }
  if (chains.empty()) return;
  const SharesLp shares = MakeLp(chains, row_of);
  const LpResult lp = MaximizeLexicographicLp(shares.served, shares.accuracy, shares.a, shares.b);
  if (lp.objective > best_served_ + 1e-9 ||
      (lp.objective > best_served_ - 1e-9 && lp.secondary > best_accuracy_)) {
    best_served_ = lp.objective;
    best_accuracy_ = lp.secondary;
  }
}

}  // namespace

ServedResult LokiMaxServed(const model::Pipeline& pipeline, const model::Workload& workload) {
  return LokiSearch(pipeline, workload).Run();
}

}  // namespace pipescale::testing
