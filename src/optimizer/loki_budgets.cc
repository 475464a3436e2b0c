#include "optimizer/loki_budgets.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace pipescale::optimizer::loki {
namespace {

// Past this many budget splits the MILP is solved whole (exact, and slower to prove).
constexpr size_t kMaxSplits = 64;
// The most steps the search for splits takes before it gives up (a long chain of tasks).
constexpr int kMaxSplitSteps = 100'000;

// Each task's budget is one of its configs' batch times, or 0 where a task may run nothing
// (when overloaded); the maximal vectors of them: every loaded path within its budget, no task
// able to rise to its next step. Empty past the limits.
std::vector<std::map<int, double>> MaximalBudgets(const Instance& in, const Columns& col,
                                                  bool may_run_nothing) {
  std::vector<int> tasks;
  std::map<int, std::vector<double>> levels;
  std::set<int> on_budgeted_path;
  for (const auto& [t, var] : col.budget) tasks.push_back(t);
  for (const Vertex& v : in.vertices) {
    for (const Config& c : v.configs) levels[v.task].push_back(c.ms);
  }
  for (auto& [t, l] : levels) {
    if (may_run_nothing) l.push_back(0);
    std::sort(l.begin(), l.end());
    l.erase(std::unique(l.begin(), l.end()), l.end());
  }
  for (size_t p = 0; p < in.budgets.size(); ++p) {
    if (!in.budgets[p]) continue;
    on_budgeted_path.insert(in.path_tasks[p].begin(), in.path_tasks[p].end());
  }
  std::map<int, double> at;  // every task at its lowest level to start
  for (int t : tasks) at[t] = levels[t].front();
  auto fits = [&] {
    for (size_t p = 0; p < in.budgets.size(); ++p) {
      if (!in.budgets[p]) continue;
      double sum = 0;
      for (int t : in.path_tasks[p]) sum += at[t];
      if (sum > *in.budgets[p] + 1e-9) return false;
    }
    return true;
  };
  auto maximal = [&] {
    for (int t : tasks) {
      const auto next = std::upper_bound(levels[t].begin(), levels[t].end(), at[t]);
      if (next == levels[t].end()) continue;
      const double was = std::exchange(at[t], *next);
      const bool room = fits();
      at[t] = was;
      if (room) return false;
    }
    return true;
  };
  std::vector<std::map<int, double>> out;
  int steps = 0;
  bool gave_up = false;
  std::function<void(size_t)> search = [&](size_t i) {
    if (gave_up || ++steps > kMaxSplitSteps || out.size() > kMaxSplits) {
      gave_up = true;
      return;
    }
    if (i == tasks.size()) {
      if (maximal()) out.push_back(at);
      return;
    }
    const int t = tasks[i];
    const std::vector<double>& l = levels[t];
    // A task on no path with a budget takes its slowest config.
    for (size_t k = on_budgeted_path.contains(t) ? 0 : l.size() - 1; k < l.size(); ++k) {
      at[t] = l[k];
      if (!fits()) break;
      search(i + 1);
    }
    at[t] = l.front();
  };
  if (fits()) search(0);
  if (gave_up) out.clear();
  return out;
}

}  // namespace

// Loki's MILP over every batch config at once is slow to prove: its LP relaxation runs a
// sliver of a replica at each config. Split by the budgets of AddBudgets (MaximalBudgets), each
// part is tight: in a part a variant runs, per hardware class, only the config of the most
// throughput within its task's budget, since any other serves less per replica in the same
// budget (ShortestBatches gives back what a smaller batch saves in latency).
void AddBudgetSplits(const Instance& in, const Columns& col, Step step, Milp& milp) {
  for (const std::map<int, double>& budgets : MaximalBudgets(in, col, step == Step::kOverloaded)) {
    std::vector<Milp::Bound> bounds;
    bounds.reserve(budgets.size() + 2 * in.vertices.size());
    for (const auto& [t, budget] : budgets) bounds.push_back({col.budget.at(t), 0, budget});
    for (size_t v = 0; v < in.vertices.size(); ++v) {
      const std::vector<Config>& configs = in.vertices[v].configs;
      std::map<int, size_t> best;  // per hardware class
      for (size_t k = 0; k < configs.size(); ++k) {
        if (configs[k].ms > budgets.at(in.vertices[v].task) + 1e-9) continue;
        auto [it, fresh] = best.try_emplace(configs[k].hardware_class, k);
        if (!fresh && configs[k].rps > configs[it->second].rps) it->second = k;
      }
      for (size_t k = 0; k < configs.size(); ++k) {
        const auto it = best.find(configs[k].hardware_class);
        if (it != best.end() && it->second == k) {
          // The only config left needs no choice: CBC would branch on it.
          if (best.size() == 1) bounds.push_back({col.z[v][k], 1, 1});
          continue;
        }
        bounds.push_back({col.n[v][k], 0, 0});
        bounds.push_back({col.z[v][k], 0, 0});
      }
    }
    milp.AddAlternative(std::move(bounds));
  }
}

void AddBudgets(const Instance& in, Columns& col, Milp& milp) {
  for (size_t v = 0; v < in.vertices.size(); ++v) {
    const Vertex& vertex = in.vertices[v];
    auto [it, fresh] = col.budget.try_emplace(vertex.task, 0);
    if (fresh) it->second = milp.AddVar(0, kInfinity, 0, false);
    std::vector<MilpTerm> row{{it->second, -1}};
    for (size_t k = 0; k < vertex.configs.size(); ++k) {
      row.push_back({col.z[v][k], vertex.configs[k].ms});
    }
    milp.AddRow(std::move(row), -kInfinity, 0);
  }
  for (size_t p = 0; p < in.budgets.size(); ++p) {
    if (!in.budgets[p]) continue;
    std::vector<MilpTerm> row;
    for (int t : in.path_tasks[p]) row.push_back({col.budget.at(t), 1});
    milp.AddRow(std::move(row), -kInfinity, *in.budgets[p]);
  }
}

namespace {

// The config of `v` that `replicas` replicas in config k should run to carry `load`: the one of
// the same class with the shortest batch time that carries it, unless the batch running there
// now is between the two, carries it too and the shortest would have less than kBatchKeepBand
// of its capacity to spare.
size_t BatchFor(const Vertex& v, size_t k, double replicas, double load) {
  const std::vector<Config>& configs = v.configs;
  const auto carries = [&](size_t l, double spare) {
    return replicas * configs[l].rps * (1 - spare) >= load - 1e-6;
  };
  size_t to = k;
  for (size_t l = 0; l < configs.size(); ++l) {
    if (configs[l].hardware_class == configs[k].hardware_class && configs[l].ms < configs[to].ms &&
        carries(l, 0)) {
      to = l;
    }
  }
  const auto running = v.running_batch.find(configs[k].hardware_class);
  if (to == k || running == v.running_batch.end() || carries(to, kBatchKeepBand)) return to;
  for (size_t l = 0; l < configs.size(); ++l) {
    // Within the budget the solution's config took (its batch time is no longer), and not the
    // shortest: the running batch, kept.
    if (configs[l].hardware_class == configs[k].hardware_class &&
        configs[l].batch == running->second && configs[l].ms <= configs[k].ms &&
        configs[l].ms > configs[to].ms && carries(l, 0)) {
      return l;
    }
  }
  return to;
}

}  // namespace

// Gives back the latency a smaller batch saves: each variant's replicas move to the config of
// the same class with the shortest batch time that still carries the variant's load. A budget
// split runs the config of the most throughput (AddBudgetSplits); where the replicas it needs
// carry the load at a smaller batch too, the smaller one serves as much, sooner.
void ShortestBatches(const Instance& in, const Columns& col, MilpSolution& solution) {
  std::vector<double> load(in.vertices.size(), 0);
  for (size_t i = 0; i < in.paths.size(); ++i) {
    const VariantPath& q = in.paths[i];
    for (size_t j = 0; j < q.vertices.size(); ++j) {
      load[q.vertices[j]] += solution.values[col.share[i]] * in.rates[q.path] * q.load[j];
    }
  }
  auto& x = solution.values;
  for (size_t v = 0; v < in.vertices.size(); ++v) {
    for (size_t k = 0; k < in.vertices[v].configs.size(); ++k) {
      const double replicas = x[col.n[v][k]];
      if (replicas < 0.5) continue;
      const size_t to = BatchFor(in.vertices[v], k, replicas, load[v]);
      if (to == k) continue;
      x[col.n[v][to]] = replicas;
      x[col.z[v][to]] = 1;
      x[col.n[v][k]] = 0;
      x[col.z[v][k]] = 0;
    }
  }
}

}  // namespace pipescale::optimizer::loki
