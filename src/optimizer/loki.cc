#include "optimizer/loki.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "common/check.h"
#include "common/strings.h"
#include "optimizer/graph.h"
#include "optimizer/loki_budgets.h"
#include "optimizer/loki_model.h"
#include "optimizer/loki_rolling.h"
#include "optimizer/pool.h"
#include "optimizer/problem.h"
#include "optimizer/tail.h"

namespace pipescale::optimizer {
namespace {

using loki::AddBudgets;
using loki::AddBudgetSplits;
using loki::Columns;
using loki::Config;
using loki::Instance;
using loki::LimitStops;
using loki::ReplicasByKey;
using loki::RoomForRunning;
using loki::RunningKeyOf;
using loki::ShortestBatches;
using loki::StartedPods;
using loki::Step;
using loki::StopLimit;
using loki::StoppedPods;
using loki::VariantPath;
using loki::Vertex;

std::vector<int> Batches(int max_batch) {
  std::vector<int> out;
  for (int b = 1; b < max_batch; b *= 2) out.push_back(b);
  out.push_back(max_batch);
  return out;
}

double EdgeRatio(const model::Task& from, const std::string& to) {
  for (const model::Edge& e : from.next) {
    if (e.task == to) return e.ratio;
  }
  return 1;
}

// Which variants a step may run. An enum, not a bool: a bare `true` at a call site once put
// the Overloaded step on the most accurate variants only, serving a fraction of what it could.
enum class Variants { kMostAccurate, kAll };

// The work budget: variant paths multiply with the tasks on a path (a 16-task chain with 3
// variants each has 43 million), and each is a column of both MILPs.
constexpr size_t kMaxVariantPaths = 4096;

// How many variant paths the loaded execution paths have, or kMaxVariantPaths + 1 if more.
size_t VariantPathCount(const model::Pipeline& pipeline, const model::Workload& workload) {
  size_t total = 0;
  for (const model::Path& path : pipeline.spec.paths) {
    if (PathRateRps(workload, path.name) <= 0) continue;
    size_t count = 1;
    for (const std::string& t : path.tasks) {
      count *= pipeline.spec.tasks[pipeline.TaskIndex(t)].variants.size();
      if (count > kMaxVariantPaths) return kMaxVariantPaths + 1;
    }
    total += count;
    if (total > kMaxVariantPaths) return kMaxVariantPaths + 1;
  }
  return total;
}

// What the tail model leaves of each replica's throughput, by "task/variant/class/batch": the
// utilisation at which its queue stays within one batch at the SLO's percentile.
using Derating = std::map<std::string, double>;

std::string ConfigKey(const std::string& task, const std::string& variant,
                      const std::string& hardware_class, int batch) {
  return StrFormat("%s/%s/%s/%d", task.c_str(), variant.c_str(), hardware_class.c_str(), batch);
}

// The fewest replicas from load.replicas on whose queue at the percentile is at most one batch.
int ReplicasWithinOneBatch(const TaskLoad& load, double percentile) {
  return FewestReplicasWithin(load, load.exec_ms, kMaxReplicas, percentile);
}

// Under the tail model, the derating of every config of `v` that has none yet: what the replicas
// `load_rps` needs (all the load any path could bring it) can carry per replica. Fewer replicas
// carry less each (they pool less): HoldTail adds what the MILP's linear capacity misses.
void SeedDerating(const model::Pipeline& pipeline, Vertex& v, double load_rps, Derating& derating) {
  const model::PipelineSpec& spec = pipeline.spec;
  const model::Task& task = spec.tasks[v.task];
  const model::Variant& variant = task.variants[v.variant];
  for (Config& c : v.configs) {
    const std::string& hw = spec.hardware_classes[c.hardware_class].name;
    const auto [it, fresh] = derating.try_emplace(ConfigKey(task.name, variant.name, hw, c.batch));
    if (fresh) {
      // The queue may hold one batch: a third of the slack Loki's rule gives each batch.
      const TaskLoad load = LoadOf(variant, *variant.FindProfile(hw), c.batch, load_rps, 1);
      it->second = ShareAtLoad(load, load.exec_ms, kMaxReplicas, spec.slo.percentile);
    }
    c.rps = it->second * 1000.0 * c.batch / c.ms;
  }
}

Instance Build(const model::Pipeline& pipeline, const model::Workload& workload, Variants variants,
               Derating& derating) {
  const model::PipelineSpec& spec = pipeline.spec;
  Instance in;
  in.batch_times_per_slo = spec.slo.model == model::LatencyModel::kTail ? 3 : 2;
  in.cluster_size = spec.budget.max_replicas;
  in.rates = PathRatesRps(pipeline, workload);
  for (double rate : in.rates) in.total_rate += rate;
  // The loosest share of an SLO over the paths through each task: slower configs can carry no
  // traffic.
  std::vector<double> slo_share(spec.tasks.size(), 0);
  for (const model::Path& path : spec.paths) {
    for (const std::string& t : path.tasks) {
      const int i = pipeline.TaskIndex(t);
      slo_share[i] = std::max(slo_share[i], path.slo_ms / in.batch_times_per_slo);
    }
  }
  std::map<std::pair<int, int>, int> vertex_of;
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const model::Task& task = spec.tasks[i];
    if (slo_share[i] == 0) continue;  // on no path
    const model::Variant* most_accurate = &task.MostAccurateVariant();
    for (size_t k = 0; k < task.variants.size(); ++k) {
      const model::Variant& variant = task.variants[k];
      if (variants == Variants::kMostAccurate && &variant != most_accurate) continue;
      Vertex v{.task = static_cast<int>(i),
               .variant = static_cast<int>(k),
               .accuracy = NormalisedAccuracy(task, variant),
               .factor = variant.multiplicative_factor,
               .configs = {}};
      for (const model::Profile& profile : variant.profiles) {
        const int hw = pipeline.HardwareClassIndex(profile.hardware_class);
        for (int b : Batches(variant.max_batch)) {
          const double ms = profile.latency.Ms(b);
          if (ms > slo_share[i] && b > 1) break;
          v.configs.push_back({hw, b, ms, 1000.0 * b / ms});
        }
      }
      vertex_of[{static_cast<int>(i), static_cast<int>(k)}] = static_cast<int>(in.vertices.size());
      in.vertices.push_back(std::move(v));
    }
  }
  // Enumerate the variant paths of every execution path that carries load.
  for (size_t p = 0; p < spec.paths.size(); ++p) {
    if (in.rates[p] <= 0) continue;
    const model::Path& path = spec.paths[p];
    std::vector<VariantPath> partial{{.path = static_cast<int>(p)}};
    for (size_t j = 0; j < path.tasks.size(); ++j) {
      const int i = pipeline.TaskIndex(path.tasks[j]);
      std::vector<VariantPath> next;
      for (const VariantPath& prefix : partial) {
        for (size_t k = 0; k < spec.tasks[i].variants.size(); ++k) {
          auto it = vertex_of.find({i, static_cast<int>(k)});
          if (it == vertex_of.end()) continue;
          const Vertex& v = in.vertices[it->second];
          VariantPath q = prefix;
          double load = 1;
          if (j > 0) {
            const Vertex& before = in.vertices[q.vertices.back()];
            load =
                q.load.back() * before.factor * EdgeRatio(spec.tasks[before.task], path.tasks[j]);
          }
          q.vertices.push_back(it->second);
          q.load.push_back(load);
          q.accuracy *= v.accuracy;
          next.push_back(std::move(q));
        }
      }
      partial = std::move(next);
    }
    for (auto& q : partial) in.paths.push_back(std::move(q));
  }
  for (size_t p = 0; p < spec.paths.size(); ++p) {
    std::vector<int>& tasks = in.path_tasks.emplace_back();
    double fastest = 0;
    for (const std::string& t : spec.paths[p].tasks) {
      tasks.push_back(pipeline.TaskIndex(t));
      double task_fastest = kInfinity;
      for (const Vertex& v : in.vertices) {
        if (v.task != tasks.back()) continue;
        for (const Config& c : v.configs) task_fastest = std::min(task_fastest, c.ms);
      }
      fastest += task_fastest;
    }
    const double budget = spec.paths[p].slo_ms / in.batch_times_per_slo;
    in.budgets.push_back(in.rates[p] > 0 && fastest <= budget ? std::optional(budget)
                                                              : std::nullopt);
  }
  // Replica bounds: all the load any variant path could bring, at the slowest config.
  std::vector<std::map<int, double>> worst(in.vertices.size());  // per execution path
  for (const VariantPath& q : in.paths) {
    for (size_t j = 0; j < q.vertices.size(); ++j) {
      double& w = worst[q.vertices[j]][q.path];
      w = std::max(w, q.load[j] * in.rates[q.path]);
    }
  }
  for (size_t v = 0; v < in.vertices.size(); ++v) {
    double load = 0;
    for (const auto& [path, w] : worst[v]) load += w;
    if (in.batch_times_per_slo == 3) SeedDerating(pipeline, in.vertices[v], load, derating);
    // Over the configs that carry anything: under the tail model one whose queue exceeds a batch
    // at any rate carries nothing.
    double slowest_rps = kInfinity;
    for (const Config& c : in.vertices[v].configs) {
      if (c.rps > 0) slowest_rps = std::min(slowest_rps, c.rps);
    }
    const double needed = std::isfinite(slowest_rps) ? std::ceil(load / slowest_rps) : 1;
    int bound = static_cast<int>(std::clamp(needed, 1.0, double{kMaxReplicas}));
    if (in.cluster_size) bound = std::min(bound, std::max(*in.cluster_size, 1));
    in.vertices[v].max_replicas = bound;
  }
  return in;
}

Columns Formulate(const model::Pipeline& pipeline, const Instance& in, Step step,
                  const LokiOptions& options, Milp& milp) {
  const model::PipelineSpec& spec = pipeline.spec;
  Columns col;
  double max_cost = 0, max_ms = 0;
  for (const auto& hw : spec.hardware_classes) max_cost = std::max(max_cost, hw.cost_per_hour);
  for (const Vertex& v : in.vertices) {
    for (const Config& c : v.configs) max_ms = std::max(max_ms, c.ms);
  }
  const bool maximize = step != Step::kHardwareScaling;
  milp.set_sense(maximize ? Milp::Sense::kMaximize : Milp::Sense::kMinimize);
  // Replicas cost 1 each in hardware scaling (cheaper classes first among equals); in the
  // maximising steps a replica costs 1e-6 of accuracy (or of served share), so spare ones are
  // not handed out.
  // Among equal plans, the config with the shorter batch time.
  std::vector<MilpTerm> all_replicas;
  std::map<int, std::vector<MilpTerm>> per_class;
  std::vector<MilpTerm> cost;
  std::map<int, std::vector<MilpTerm>> per_task;
  for (const Vertex& v : in.vertices) {
    std::vector<int> zs, ns;
    std::vector<MilpTerm> one_config;
    for (const Config& c : v.configs) {
      const double price = spec.hardware_classes[c.hardware_class].cost_per_hour;
      const double replica_weight =
          maximize ? -1e-6 : 1 + (max_cost > 0 ? 1e-3 * price / max_cost : 0);
      const double tie = 1e-4 * c.ms / max_ms * (maximize ? -1e-3 : 1);
      const int z = milp.AddBinary(tie);
      const int n = milp.AddVar(0, v.max_replicas, replica_weight, true);
      milp.AddRow({{n, 1}, {z, -static_cast<double>(v.max_replicas)}}, -kInfinity, 0);
      one_config.push_back({z, 1});
      all_replicas.push_back({n, 1});
      per_class[c.hardware_class].push_back({n, 1});
      cost.push_back({n, price});
      per_task[v.task].push_back({n, 1});
      zs.push_back(z);
      ns.push_back(n);
    }
    if (!one_config.empty()) milp.AddRow(one_config, -kInfinity, 1);
    col.z.push_back(std::move(zs));
    col.n.push_back(std::move(ns));
  }
  if (in.cluster_size) milp.AddRow(all_replicas, -kInfinity, *in.cluster_size);
  for (int h = 0; h < static_cast<int>(spec.hardware_classes.size()); ++h) {
    if (auto limit = spec.hardware_classes[h].max_replicas; limit && per_class.contains(h)) {
      milp.AddRow(per_class[h], -kInfinity, *limit);
    }
  }
  if (spec.budget.cost_per_hour) milp.AddRow(cost, -kInfinity, *spec.budget.cost_per_hour);
  // Every task keeps a replica, so a path that gets load again finds its models warm; not
  // when overloaded, where every replica goes to the demand that can be served.
  if (step != Step::kOverloaded) {
    for (auto& [task, terms] : per_task) milp.AddRow(terms, 1, kInfinity);
  }

  AddBudgets(in, col, milp);
  // Shares of each execution path's demand over its variant paths.
  std::vector<std::vector<MilpTerm>> shares_of(spec.paths.size());
  std::vector<std::vector<MilpTerm>> load_on(in.vertices.size());
  std::vector<MilpTerm> accuracy;
  for (const VariantPath& q : in.paths) {
    const double weight = in.rates[q.path] / in.total_rate;
    // Overloaded maximises the served share alone first; PreferAccuracy then re-weighs.
    const double acc_coef = step == Step::kAccuracyScaling ? weight * q.accuracy : 0;
    const bool fits = in.budgets[q.path].has_value();  // a path that cannot fit carries nothing
    const int c = milp.AddVar(0, fits ? 1 : 0, acc_coef, false);
    for (size_t j = 0; j < q.vertices.size(); ++j) {
      load_on[q.vertices[j]].push_back({c, in.rates[q.path] * q.load[j]});
    }
    shares_of[q.path].push_back({c, 1});
    accuracy.push_back({c, q.accuracy});
    col.share.push_back(c);
  }
  for (size_t p = 0; p < spec.paths.size(); ++p) {
    if (in.rates[p] <= 0) {
      col.served.push_back(-1);
      continue;
    }
    if (step == Step::kOverloaded) {
      const int s = milp.AddVar(0, 1, in.rates[p] / in.total_rate, false);
      auto terms = shares_of[p];
      terms.push_back({s, -1});
      milp.AddRow(terms, 0, 0);
      col.served.push_back(s);
    } else {
      milp.AddRow(shares_of[p], 1, 1);
      col.served.push_back(-1);
    }
    if (step == Step::kAccuracyScaling && options.accuracy_floor) {
      std::vector<MilpTerm> terms;
      for (size_t i = 0; i < in.paths.size(); ++i) {
        if (in.paths[i].path == static_cast<int>(p)) {
          terms.push_back({col.share[i], in.paths[i].accuracy});
        }
      }
      milp.AddRow(terms, *options.accuracy_floor, kInfinity);
    }
  }
  // Capacity: the load the shares bring to a variant fits its replicas' throughput.
  for (size_t v = 0; v < in.vertices.size(); ++v) {
    if (load_on[v].empty()) continue;
    auto terms = load_on[v];
    for (size_t k = 0; k < in.vertices[v].configs.size(); ++k) {
      terms.push_back({col.n[v][k], -in.vertices[v].configs[k].rps});
    }
    milp.AddRow(terms, -kInfinity, 0);
  }
  if (options.split_by_budgets) AddBudgetSplits(in, col, step, milp);
  return col;
}

// The share of the whole demand a solution serves, and the demand-weighted accuracy of what
// it serves (both per request of the whole demand, as the objectives count them).
struct Served {
  double share = 0;
  double accuracy = 0;
};

Served ServedBy(const Instance& in, const Columns& col, const MilpSolution& solution) {
  Served out;
  for (size_t i = 0; i < in.paths.size(); ++i) {
    const VariantPath& q = in.paths[i];
    const double share = in.rates[q.path] / in.total_rate * solution.values[col.share[i]];
    out.share += share;
    out.accuracy += share * q.accuracy;
  }
  return out;
}

// Turns the Overloaded step's model into its second solve: keep at least `floor` of the
// demand and, among such plans, maximise the demand-weighted accuracy. Two solves, not one
// weighted objective: an accuracy term small enough never to cost served demand sits inside
// CBC's relative gap, and CBC then stops without looking at accuracy at all.
void PreferAccuracy(const Instance& in, const Columns& col, double floor, Milp& milp) {
  std::vector<MilpTerm> total;
  for (size_t p = 0; p < col.served.size(); ++p) {
    if (col.served[p] < 0) continue;
    milp.SetObjective(col.served[p], 0);
    total.push_back({col.served[p], in.rates[p] / in.total_rate});
  }
  milp.AddRow(std::move(total), floor, kInfinity);
  for (size_t i = 0; i < in.paths.size(); ++i) {
    const VariantPath& q = in.paths[i];
    milp.SetObjective(col.share[i], in.rates[q.path] / in.total_rate * q.accuracy);
  }
}

// The Overloaded step after its first solve: the most accurate plan that serves what the
// first found, less the relative gap (the first share is only known to that precision) and
// never less than 1e-5 of it: a floor at the very share found sits on CBC's tolerances, where
// CLP aborted the process (coin-or/Clp#173) on generated instances. The first's plan when it
// already runs the most accurate variants only, or when the second finds none in time.
MilpSolution MostAccurateForShare(const Instance& in, const Columns& col,
                                  const MilpOptions& options, const MilpSolver& solver,
                                  MilpSolution first, Milp& milp) {
  const Served served = ServedBy(in, col, first);
  if (served.share <= 0 || served.accuracy >= served.share * (1 - 1e-9)) return first;
  PreferAccuracy(in, col, served.share * (1 - std::max(options.relative_gap, 1e-5)), milp);
  MilpSolution second = SolveMilpWith(solver, milp, options);
  if (!second.HasSolution()) return first;
  if (first.status != MilpStatus::kOptimal) second.status = MilpStatus::kFeasible;
  return second;
}

model::SolveStatus StatusOf(MilpStatus status) {
  return status == MilpStatus::kOptimal ? model::SolveStatus::kOptimal
                                        : model::SolveStatus::kTimeLimit;
}

model::Plan Extract(const model::Pipeline& pipeline, const Instance& in, const Columns& col,
                    const MilpSolution& solution, model::Phase phase) {
  const model::PipelineSpec& spec = pipeline.spec;
  model::Plan plan;
  model::AccuracyScalingPlan& loki = plan.detail.emplace<model::AccuracyScalingPlan>();
  loki.phase = phase;
  std::vector<double> load(in.vertices.size(), 0);
  for (size_t i = 0; i < in.paths.size(); ++i) {
    const VariantPath& q = in.paths[i];
    const double share = solution.values[col.share[i]];
    for (size_t j = 0; j < q.vertices.size(); ++j) {
      load[q.vertices[j]] += share * in.rates[q.path] * q.load[j];
    }
  }
  std::vector<const Config*> chosen(in.vertices.size(), nullptr);
  for (size_t v = 0; v < in.vertices.size(); ++v) {
    const Vertex& vertex = in.vertices[v];
    for (size_t k = 0; k < vertex.configs.size(); ++k) {
      // CBC's integers come back as doubles within its tolerance (2.9999996 is 3).
      const int replicas = static_cast<int>(std::lround(solution.values[col.n[v][k]]));
      if (solution.values[col.z[v][k]] < 0.5 || replicas == 0) continue;
      const Config& c = vertex.configs[k];
      chosen[v] = &c;
      const model::Task& task = spec.tasks[vertex.task];
      plan.tasks.push_back({.task = task.name,
                            .variant = task.variants[vertex.variant].name,
                            .hardware_class = spec.hardware_classes[c.hardware_class].name,
                            .replicas = replicas,
                            .batch_size = c.batch,
                            .latency_ms = c.ms,
                            .queue_ms = c.ms,
                            .batch_wait_ms = c.ms,
                            .load_rps = load[v]});
    }
  }
  // Variant paths with a share; the served demand and its accuracy.
  std::vector<double> worst_ms(spec.paths.size(), 0);
  double served = 0, accuracy = 0;
  for (size_t i = 0; i < in.paths.size(); ++i) {
    const VariantPath& q = in.paths[i];
    const double share = solution.values[col.share[i]];
    if (share < 1e-9) continue;
    model::VariantPath out{.path = spec.paths[q.path].name,
                           .variants = {},
                           .share = share,
                           .accuracy = q.accuracy,
                           .latency_ms = 0};
    for (int v : q.vertices) {
      const Vertex& vertex = in.vertices[v];
      out.variants.push_back(spec.tasks[vertex.task].variants[vertex.variant].name);
      if (chosen[v] != nullptr) out.latency_ms += chosen[v]->ms;
    }
    worst_ms[q.path] = std::max(worst_ms[q.path], out.latency_ms);
    served += share * in.rates[q.path];
    accuracy += share * in.rates[q.path] * q.accuracy;
    loki.variant_paths.push_back(std::move(out));
  }
  for (size_t p = 0; p < spec.paths.size(); ++p) {
    // A request's worst case: its share of the SLO for each batch time on its path.
    plan.paths.push_back(
        {spec.paths[p].name, spec.paths[p].slo_ms, in.batch_times_per_slo * worst_ms[p]});
  }
  plan.served_fraction = in.total_rate > 0 ? served / in.total_rate : 1;
  loki.accuracy = served > 0 ? accuracy / served : 1;
  plan.cost_per_hour = CostPerHour(pipeline, plan.tasks);
  plan.report.optimizer = "loki";
  plan.report.status = StatusOf(solution.status);
  return plan;
}

// Requests per second a plan entry's replicas serve at its batch size.
double CapacityRps(const model::TaskPlan& t) {
  return t.replicas * 1000.0 * t.batch_size / t.latency_ms;
}

// Whether the cluster has room for one more replica of class `hw` (maxReplicas, the class's own
// limit, the cost budget).
bool RoomFor(const model::Pipeline& pipeline, const model::Plan& plan, const std::string& hw) {
  const model::PipelineSpec& spec = pipeline.spec;
  const model::HardwareClass& cls = spec.hardware_classes[pipeline.HardwareClassIndex(hw)];
  int total = 0, of_class = 0;
  for (const model::TaskPlan& t : plan.tasks) {
    total += t.replicas;
    of_class += t.hardware_class == hw ? t.replicas : 0;
  }
  return (!spec.budget.max_replicas || total < *spec.budget.max_replicas) &&
         (!cls.max_replicas || of_class < *cls.max_replicas) &&
         (!spec.budget.cost_per_hour ||
          CostPerHour(pipeline, plan.tasks) + cls.cost_per_hour <= *spec.budget.cost_per_hour);
}

// Under the tail model, replicas for each config the MILP runs hotter than its queue allows
// (its linear capacity cannot see that fewer replicas pool less), while the cluster has room;
// where it has none, a note says so and the router's door refuses what would be late.
void HoldTail(const model::Pipeline& pipeline, model::Plan& plan, std::vector<std::string>& notes) {
  for (model::TaskPlan& t : plan.tasks) {
    if (t.load_rps <= 0) continue;
    const model::Variant* variant = pipeline.FindVariant(t.task, t.variant);
    const model::Profile* profile = variant->FindProfile(t.hardware_class);
    PIPESCALE_CHECK(profile != nullptr);
    const int needed =
        ReplicasWithinOneBatch(LoadOf(*variant, *profile, t.batch_size, t.load_rps, t.replicas),
                               pipeline.spec.slo.percentile);
    while (t.replicas < needed && RoomFor(pipeline, plan, t.hardware_class)) ++t.replicas;
    if (t.replicas < needed) {
      notes.push_back(StrFormat(
          "tail: %s/%s needs %d replicas to queue at most one batch at "
          "p%g; the cluster has room for %d",
          t.task.c_str(), t.variant.c_str(), needed, pipeline.spec.slo.percentile, t.replicas));
    }
  }
  plan.cost_per_hour = CostPerHour(pipeline, plan.tasks);
}

// A held plan may serve this much less of the demand than the best (both overloaded) and
// still be kept: the two MILPs' shares differ within CBC's gaps.
constexpr double kHeldServedSlack = 1e-3;

// Limits the model to the (task, variant, class) Deployments in `running`.
void KeepToRunning(const model::Pipeline& pipeline, const Instance& in, const Columns& col,
                   const std::map<std::string, int>& running, Milp& milp) {
  for (size_t v = 0; v < in.vertices.size(); ++v) {
    const Vertex& vertex = in.vertices[v];
    for (size_t k = 0; k < vertex.configs.size(); ++k) {
      if (running.contains(RunningKeyOf(pipeline.spec, vertex, vertex.configs[k]))) continue;
      // Its replicas only: a budget split may fix which config the variant would run.
      milp.SetBounds(col.n[v][k], 0, 0);
    }
  }
}

// Marks on each vertex the batch its running Deployments were given, by class (ShortestBatches
// keeps them near a threshold).
void MarkRunningBatches(const model::Pipeline& pipeline, const std::map<std::string, int>& batches,
                        Instance& in) {
  if (batches.empty()) return;
  for (Vertex& vertex : in.vertices) {
    for (const Config& c : vertex.configs) {
      const auto it = batches.find(RunningKeyOf(pipeline.spec, vertex, c));
      if (it != batches.end()) vertex.running_batch[c.hardware_class] = it->second;
    }
  }
}

// Gives each task a budget of batch time at least that of every batch its running Deployments
// run now (Vertex::running_batch): the budget splits that leave a running batch no room are out,
// and ShortestBatches keeps it while no smaller one carries its load with room to spare.
void KeepRunningBatches(const Instance& in, const Columns& col, Milp& milp) {
  for (const Vertex& vertex : in.vertices) {
    const auto budget = col.budget.find(vertex.task);
    if (budget == col.budget.end()) continue;
    for (const Config& c : vertex.configs) {
      const auto it = vertex.running_batch.find(c.hardware_class);
      if (it != vertex.running_batch.end() && it->second == c.batch) {
        milp.AddRow({{budget->second, 1}}, c.ms, kInfinity);
      }
    }
  }
}

// Whether `plan` runs every (task, variant, class) of `batches` that it runs at that batch.
bool RunsBatches(const model::Plan& plan, const std::map<std::string, int>& batches) {
  return std::ranges::all_of(plan.tasks, [&](const model::TaskPlan& t) {
    const auto it = batches.find(RunningKey(t.task, t.variant, t.hardware_class));
    return it == batches.end() || it->second == t.batch_size;
  });
}

// Whether every replica of `plan` runs in a Deployment of `running`.
bool RunsOnly(const model::Plan& plan, const std::map<std::string, int>& running) {
  return std::ranges::all_of(plan.tasks, [&](const model::TaskPlan& t) {
    return running.contains(RunningKey(t.task, t.variant, t.hardware_class));
  });
}

}  // namespace

model::Plan SolveLoki(const model::Pipeline& pipeline, const model::Workload& workload,
                      const LokiOptions& options) {
  std::vector<std::string> notes;
  std::vector<std::string> reasons;
  // Past the work budget only the most accurate variants are planned: one variant path each.
  const bool all_variants_fit = VariantPathCount(pipeline, workload) <= kMaxVariantPaths;
  if (!all_variants_fit && !options.hardware_scaling_only) {
    reasons.push_back(
        StrFormat("the paths have more than %zu variant paths (the variants of "
                  "each task multiplied along the path): planned with the most "
                  "accurate variants only",
                  kMaxVariantPaths));
  }
  // With one variant per task, accuracy scaling is hardware scaling again: skip its MILP.
  bool has_alternatives = false;
  for (const model::Task& task : pipeline.spec.tasks) {
    has_alternatives = has_alternatives || task.variants.size() > 1;
  }
  const bool accuracy_scaling =
      !options.hardware_scaling_only && all_variants_fit && has_alternatives;
  Derating derating;                 // seeded once per config, kept across the steps
  std::optional<int> stops_limited;  // set for the second pass, when the best stops too many
  auto solve_once = [&](Step step, Variants variants, bool held,
                        bool batches_held) -> std::optional<model::Plan> {
    Instance in = Build(pipeline, workload, variants, derating);
    if (step == Step::kHardwareScaling) MarkRunningBatches(pipeline, options.running_batches, in);
    if (stops_limited) RoomForRunning(pipeline, options.running, in);
    Milp milp;
    const Columns col = Formulate(pipeline, in, step, options, milp);
    if (held) KeepToRunning(pipeline, in, col, options.running, milp);
    if (batches_held) KeepRunningBatches(in, col, milp);
    if (stops_limited) LimitStops(pipeline, in, col, options.running, *stops_limited, milp);
    MilpSolution solution = SolveMilpWith(options.solver, milp, options.milp);
    if (!solution.HasSolution()) {
      notes.push_back(StrFormat("%s: %s%s",
                                step == Step::kHardwareScaling   ? "hardware scaling"
                                : step == Step::kAccuracyScaling ? "accuracy scaling"
                                                                 : "overload",
                                MilpStatusName(solution.status),
                                solution.failure.empty() ? "" : (": " + solution.failure).c_str()));
      return std::nullopt;
    }
    if (step == Step::kOverloaded) {
      solution =
          MostAccurateForShare(in, col, options.milp, options.solver, std::move(solution), milp);
    }
    ShortestBatches(in, col, solution);
    const model::Phase phase = step == Step::kHardwareScaling   ? model::Phase::kHardwareScaling
                               : step == Step::kAccuracyScaling ? model::Phase::kAccuracyScaling
                                                                : model::Phase::kOverloaded;
    model::Plan plan = Extract(pipeline, in, col, solution, phase);
    plan.report.objective =
        step == Step::kHardwareScaling
            ? model::Objective{static_cast<double>(plan.TotalReplicas()), "replicas"}
        : step == Step::kAccuracyScaling
            ? model::Objective{plan.accuracy_scaling()->accuracy, "accuracy"}
            : model::Objective{plan.served_fraction, "servedFraction"};
    return plan;
  };

  auto solve_tail = [&](Step step, Variants variants, bool held,
                        bool batches_held) -> std::optional<model::Plan> {
    std::optional<model::Plan> plan = solve_once(step, variants, held, batches_held);
    if (plan && pipeline.spec.slo.model == model::LatencyModel::kTail) {
      HoldTail(pipeline, *plan, notes);
      if (step == Step::kHardwareScaling) {
        plan->report.objective = {static_cast<double>(plan->TotalReplicas()), "replicas"};
      }
    }
    return plan;
  };
  // A plan that changes a running batch is made again with the running batches, and that one
  // taken where it runs the same replicas in the same Deployments and serves as much as
  // accurately: two plans that trade batch time between tasks otherwise alternate as the demand
  // wobbles (the demo's steady 20/s flipped detect's and classify-car's batches every 10-30 s).
  // Only while hardware scaling serves the demand, and where the replicas stay: past the nodes
  // a plan of more batch capacity at equal replicas serves a rise better (held there, cars at a
  // steady 60/s kept 1.3 points less, and the conversation trace at 10x lost 15% of its goodput).
  auto attempt = [&](Step step, Variants variants,
                     bool held = false) -> std::optional<model::Plan> {
    const size_t before = notes.size();
    std::optional<model::Plan> plan = solve_tail(step, variants, held, false);
    if (!plan || step != Step::kHardwareScaling || options.running_batches.empty() ||
        RunsBatches(*plan, options.running_batches)) {
      return plan;
    }
    const size_t noted = notes.size();
    std::optional<model::Plan> kept = solve_tail(step, variants, held, true);
    if (!kept || ReplicasByKey(*kept) != ReplicasByKey(*plan) ||
        kept->served_fraction < plan->served_fraction - kHeldServedSlack ||
        LokiPart(*kept).accuracy < LokiPart(*plan).accuracy - options.hold_accuracy) {
      notes.resize(noted);
      return plan;
    }
    notes.erase(notes.begin() + static_cast<std::ptrdiff_t>(before),
                notes.begin() + static_cast<std::ptrdiff_t>(noted));
    return kept;
  };

  // Hardware scaling runs the most accurate variants only: nothing there to hold.
  auto hold = [&](Step step, std::optional<model::Plan> plan) {
    if (!plan || !accuracy_scaling || options.running.empty() || RunsOnly(*plan, options.running)) {
      return plan;
    }
    const size_t noted = notes.size();  // what the held solve notes goes if it is not taken
    std::optional<model::Plan> held = attempt(step, Variants::kAll, true);
    if (!held || held->tasks.empty()) {
      notes.resize(noted);
      return plan;
    }
    if (options.hold_while_starting) {
      notes.push_back(StrFormat(
          "held the running variants while some of their pods are not Ready: %.2f%% accurate, "
          "%.1f%% of the demand served, where the best other mix found is %.2f%%, %.1f%%",
          100 * LokiPart(*held).accuracy, 100 * held->served_fraction,
          100 * LokiPart(*plan).accuracy, 100 * plan->served_fraction));
      return held;
    }
    if (held->served_fraction < plan->served_fraction - kHeldServedSlack ||
        LokiPart(*held).accuracy < LokiPart(*plan).accuracy - options.hold_accuracy) {
      notes.resize(noted);
      return plan;
    }
    notes.push_back(StrFormat(
        "held the running variants: %.2f%% accurate, where the best other mix found is %.2f%% "
        "(a change must gain %.2f points to restart pods)",
        100 * LokiPart(*held).accuracy, 100 * LokiPart(*plan).accuracy,
        100 * options.hold_accuracy));
    return held;
  };
  // Loki's steps: hardware scaling, accuracy scaling, overloaded; each held as above.
  auto plan_steps = [&]() -> model::Plan {
    std::optional<model::Plan> plan = attempt(Step::kHardwareScaling, Variants::kMostAccurate);
    // Back to the most accurate variants too waits until the running pods are Ready.
    if (plan && options.hold_while_starting) plan = hold(Step::kAccuracyScaling, std::move(plan));
    if (!plan && accuracy_scaling) {
      plan = hold(Step::kAccuracyScaling, attempt(Step::kAccuracyScaling, Variants::kAll));
    }
    if (plan) return *std::move(plan);
    // The largest servable share needs every variant (the fastest carry the most); only a
    // system without variants (hardware_scaling_only) or past the budget stays on the most
    // accurate ones.
    plan = attempt(Step::kOverloaded, accuracy_scaling ? Variants::kAll : Variants::kMostAccurate);
    plan = hold(Step::kOverloaded, std::move(plan));
    if (plan) {
      plan->report.status = model::SolveStatus::kInfeasible;
    } else {  // the time limit passed before any solution: no tasks, the caller holds what runs
      plan = model::Plan{};
      plan->detail = model::AccuracyScalingPlan{.phase = model::Phase::kOverloaded};
      plan->served_fraction = 0;
      plan->report.optimizer = "loki";
      plan->report.status = model::SolveStatus::kTimeLimit;
    }
    notes.push_back(
        StrFormat("overloaded: serves %.1f%% of the demand", 100 * plan->served_fraction));
    reasons.push_back(notes.back());
    return *std::move(plan);
  };
  const std::vector<std::string> first_reasons = reasons;
  std::optional<model::Plan> plan = plan_steps();
  const int stop_limit = StopLimit(options.running, options.pods_starting);
  const int stops = StoppedPods(*plan, options.running);
  if (stops > stop_limit && StartedPods(*plan, options.running) > 0) {
    // The best plan again, stopping at most stop_limit of the Ready pods: the rest of the change
    // follows once the pods it starts are Ready (hold_while_starting). A plan that starts nothing
    // only scales down, which makes nothing it needs unavailable; one without tasks (no solution
    // in time) is the caller's to hold.
    model::Plan best = *std::move(plan);
    std::vector<std::string> best_notes = std::exchange(notes, {});
    std::vector<std::string> best_reasons = std::exchange(reasons, first_reasons);
    stops_limited = stop_limit;
    plan = plan_steps();
    if (plan->tasks.empty()) {  // nothing within the limit (the class shrank): the best plan
      plan = std::move(best);
      notes = std::move(best_notes);
      reasons = std::move(best_reasons);
    } else {
      // A step short of the demand is the limit's, not the cluster's: the best plan's status.
      if (best.report.status != model::SolveStatus::kInfeasible) {
        plan->report.status = best.report.status;
      }
      notes.push_back(StrFormat(
          "rolling: stops %d of the %d Ready pods the best plan stops (%.2f%% accurate, %.1f%% of "
          "the demand served, where this step gives %.2f%%, %.1f%%)",
          StoppedPods(*plan, options.running), stops, 100 * LokiPart(best).accuracy,
          100 * best.served_fraction, 100 * LokiPart(*plan).accuracy, 100 * plan->served_fraction));
    }
  }
  if (plan->report.status != model::SolveStatus::kInfeasible) reasons.clear();
  for (const std::string& r : reasons) {
    if (std::find(notes.begin(), notes.end(), r) == notes.end()) notes.push_back(r);
  }
  for (const model::TaskPlan& t : plan->tasks) {
    const auto it = derating.find(ConfigKey(t.task, t.variant, t.hardware_class, t.batch_size));
    const std::string short_of_room = "tail: " + t.task + "/" + t.variant + " needs";
    if (it == derating.end() || it->second >= 1 ||
        std::any_of(notes.begin(), notes.end(),
                    [&](const std::string& n) { return n.starts_with(short_of_room); })) {
      continue;
    }
    notes.push_back(StrFormat(
        "tail: %s/%s planned with %.0f%% of each replica's throughput, so "
        "that it queues at most one batch at p%g",
        t.task.c_str(), t.variant.c_str(), 100 * it->second, pipeline.spec.slo.percentile));
  }
  plan->report.notes = std::move(notes);
  plan->report.reasons = std::move(reasons);
  RouteMostAccurateFirst(pipeline, workload, *plan);
  return *plan;
}

const model::AccuracyScalingPlan& LokiPart(const model::Plan& plan) {
  const model::AccuracyScalingPlan* part = plan.accuracy_scaling();
  PIPESCALE_CHECK(part != nullptr);
  return *part;
}

void RouteMostAccurateFirst(const model::Pipeline& pipeline, const model::Workload& workload,
                            model::Plan& plan) {
  const model::PipelineSpec& spec = pipeline.spec;
  model::AccuracyScalingPlan* loki = plan.accuracy_scaling();
  PIPESCALE_CHECK(loki != nullptr);
  loki->routing.clear();
  loki->backups.clear();
  // Capacity left per (task, variant), and the variants of each task most accurate first.
  std::map<std::pair<std::string, std::string>, double> left;
  std::map<std::string, std::vector<const model::TaskPlan*>> offered;
  for (const model::TaskPlan& t : plan.tasks) {
    left[{t.task, t.variant}] += CapacityRps(t);
    offered[t.task].push_back(&t);
  }
  auto accuracy_of = [&](const std::string& task, const std::string& variant) {
    const model::Task& tk = spec.tasks[pipeline.TaskIndex(task)];
    const model::Variant* v = tk.FindVariant(variant);
    return v != nullptr ? NormalisedAccuracy(tk, *v) : 0.0;
  };
  for (auto& entry : offered) {
    const std::string& task = entry.first;
    std::stable_sort(entry.second.begin(), entry.second.end(), [&](const auto* a, const auto* b) {
      return accuracy_of(task, a->variant) > accuracy_of(task, b->variant);
    });
  }

  // A stream: requests of one execution path arriving at position `at` of it from one variant
  // of the task before (empty: the client), with the accuracy of the variants they went through.
  struct Stream {
    int path;
    size_t at;
    std::string from;
    double rps;
    double accuracy;
  };
  // Tasks in topological order: a task's streams are all known before it is filled.
  const std::vector<int> order = TopologicalOrder(pipeline);
  // When overloaded, only the share of each path the plan serves enters; the client's table
  // then sums to that share and the rest is dropped at the door.
  std::map<std::string, double> served;
  for (const model::VariantPath& v : loki->variant_paths) served[v.path] += v.share;
  std::map<int, std::vector<Stream>> pending;
  std::vector<double> entering(spec.paths.size(), 0);
  for (size_t p = 0; p < spec.paths.size(); ++p) {
    const double rate = PathRateRps(workload, spec.paths[p].name);
    if (rate <= 0) continue;
    const double share =
        loki->phase == model::Phase::kOverloaded ? std::min(1.0, served[spec.paths[p].name]) : 1.0;
    entering[p] = rate;
    if (share <= 0) continue;
    pending[pipeline.TaskIndex(spec.paths[p].tasks[0])].push_back(
        {static_cast<int>(p), 0, "", rate * share, 1.0});
  }
  for (int i : order) {
    const model::Task& task = spec.tasks[i];
    auto& streams = pending[i];
    std::stable_sort(streams.begin(), streams.end(),
                     [](const Stream& a, const Stream& b) { return a.accuracy > b.accuracy; });
    const auto& variants = offered[task.name];
    // What each variant received, per (path, position), to pass on.
    std::map<std::tuple<int, size_t, std::string>, std::pair<double, double>> received;
    for (const Stream& s : streams) {
      std::vector<double> routed(variants.size(), 0);
      double rest = s.rps;
      for (size_t k = 0; k < variants.size() && rest > 0; ++k) {
        double& cap = left[{task.name, variants[k]->variant}];
        const double take = std::min(cap, rest);
        routed[k] += take;
        cap -= take;
        rest -= take;
      }
      if (rest > 1e-12) {  // over capacity: spread the rest in proportion to capacity
        double total = 0;
        for (const auto* v : variants) total += CapacityRps(*v);
        for (size_t k = 0; k < variants.size() && total > 0; ++k) {
          routed[k] += rest * CapacityRps(*variants[k]) / total;
        }
      }
      model::VariantRoute table{spec.paths[s.path].name, task.name, s.from, {}};
      // Fractions of what arrives: at the door, of the path's whole demand.
      const double arriving = s.at == 0 ? entering[s.path] : s.rps;
      for (size_t k = 0; k < variants.size(); ++k) {
        if (routed[k] <= 0) continue;
        table.to.emplace_back(variants[k]->variant, routed[k] / arriving);
        auto& r = received[{s.path, s.at, variants[k]->variant}];
        r.second = (r.first * r.second + routed[k] * s.accuracy) / (r.first + routed[k]);
        r.first += routed[k];
      }
      loki->routing.push_back(std::move(table));
    }
    for (const auto& [key, value] : received) {
      const auto& [path, at, variant] = key;
      const model::Path& p = spec.paths[path];
      if (at + 1 >= p.tasks.size()) continue;
      const model::Variant* v = task.FindVariant(variant);
      const double factor = v != nullptr ? v->multiplicative_factor : 1;
      pending[pipeline.TaskIndex(p.tasks[at + 1])].push_back(
          {path, at + 1, variant, value.first * factor * EdgeRatio(task, p.tasks[at + 1]),
           value.second * accuracy_of(task.name, variant)});
    }
  }
  for (int i : order) {
    for (const auto* v : offered[spec.tasks[i].name]) {
      const double spare = left[{v->task, v->variant}];
      if (spare > 1e-9) loki->backups.push_back({v->task, v->variant, spare});
    }
  }
}

}  // namespace pipescale::optimizer
