#include "optimizer/problem.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"
#include "common/strings.h"
#include "optimizer/graph.h"
#include "optimizer/tail.h"

namespace pipescale::optimizer {
namespace {

constexpr double kEps = 1e-9;

// lambda / h(b) rounded up, at least one; kMaxReplicas + 1 for "more than the maximum", which
// also keeps every sum of replicas and costs far from overflowing.
int ReplicasFor(double rate_rps, double exec_ms, int batch) {
  const double needed = std::ceil(rate_rps * exec_ms / (1000.0 * batch) - kEps);
  if (!(needed <= kMaxReplicas)) return kMaxReplicas + 1;  // NaN too
  return std::max(1, static_cast<int>(needed));
}

// The largest replica count of a class at `price` whose cost is at most `cost_micro`, costs
// being lround(replicas * price * 1e6) as Compile computes them (monotone in replicas).
int MostReplicasWithin(double price, std::int64_t cost_micro) {
  if (price <= 0) return kMaxReplicas + 1;
  const auto cost = [&](int replicas) { return std::lround(replicas * price * 1e6); };
  const double guess = std::floor(static_cast<double>(cost_micro) / (price * 1e6));
  int n = static_cast<int>(std::clamp(guess, 0.0, static_cast<double>(kMaxReplicas + 1)));
  while (n <= kMaxReplicas && cost(n + 1) <= cost_micro) ++n;
  while (n > 0 && cost(n) > cost_micro) --n;
  return n;
}

// Per hardware class, the fewest replicas among the kept choices of batch <= b (a Fenwick tree
// of prefix minima over batch sizes).
class PrefixMinimum {
 public:
  explicit PrefixMinimum(int max_batch) : tree_(max_batch + 1, kMaxReplicas + 2) {}
  void Insert(int batch, int replicas) {
    for (int i = batch; i < static_cast<int>(tree_.size()); i += i & -i) {
      tree_[i] = std::min(tree_[i], replicas);
    }
  }
  int Query(int batch) const {
    int least = kMaxReplicas + 2;
    for (int i = batch; i > 0; i -= i & -i) least = std::min(least, tree_[i]);
    return least;
  }

 private:
  std::vector<int> tree_;
};

// Keeps the choices that no other choice beats on latency and all objective terms at once.
// An earlier choice f (faster, or as fast and cheaper) dominates c when f.replicas <= c.replicas,
// f.cost <= c.cost and f.batch <= c.batch. Within one class cost grows with replicas, so per
// class this asks for the fewest replicas among kept choices of batch <= c.batch: a query of a
// prefix-minimum tree instead of a scan of the whole front.
std::vector<Choice> ParetoFront(std::vector<Choice> choices, const std::vector<double>& prices) {
  std::sort(choices.begin(), choices.end(), [](const Choice& x, const Choice& y) {
    if (x.LatencyMs() != y.LatencyMs()) return x.LatencyMs() < y.LatencyMs();
    return x.Cost() < y.Cost();
  });
  int max_batch = 1;
  for (const Choice& c : choices) max_batch = std::max(max_batch, c.batch);
  std::vector<PrefixMinimum> kept(prices.size(), PrefixMinimum(max_batch));
  std::vector<bool> used(prices.size(), false);
  std::vector<Choice> front;
  for (const Choice& c : choices) {
    bool dominated = false;
    for (size_t h = 0; h < prices.size() && !dominated; ++h) {
      if (!used[h]) continue;
      const int within = std::min(c.replicas, MostReplicasWithin(prices[h], c.cost_micro));
      dominated = kept[h].Query(c.batch) <= within;
    }
    if (dominated) continue;
    kept[c.hardware_class].Insert(c.batch, c.replicas);
    used[c.hardware_class] = true;
    front.push_back(c);
  }
  return front;
}

// How many replicas beyond the fewest that keep up the tail model tries per (class, batch): every
// count up to max(kReplicaSteps, the fewest) more, or until nothing queues (then more replicas buy
// nothing; with many replicas Erlang C falls below 1 - p within a few square roots of the load).
constexpr int kReplicaSteps = 64;

// The tail model's latency of task `dnn` at choice `c` (its class and batch) on each replica
// count from `replicas` on.
TailSeries TailFrom(const model::Pipeline& pipeline, const Dnn& dnn, const Choice& c,
                    int replicas) {
  const model::Variant& variant =
      pipeline.spec.tasks[pipeline.TaskIndex(dnn.task)].variants[dnn.variant];
  const model::Profile* profile =
      variant.FindProfile(pipeline.spec.hardware_classes[c.hardware_class].name);
  PIPESCALE_CHECK(profile != nullptr);
  return TailSeries(
      {.rate_rps = dnn.rate_rps,
       .replicas = replicas,
       .batch = c.batch,
       .exec_ms = c.exec_ms,
       .exec_one_ms = profile->latency.Ms(1),
       .formation = variant.RouterBatches() ? BatchFormation::kRouter : BatchFormation::kServer,
       .arrival_dispersion = dnn.dispersion},
      pipeline.spec.slo.percentile);
}

// Under the tail model a (class, batch) choice comes at several replica counts: more replicas
// queue less. `c` holds the mean-value choice, whose replicas are the fewest that keep up with
// the rate. Counts that wait no less than one fewer are left out (they cost more for nothing).
void AddTailChoices(const model::Pipeline& pipeline, const Dnn& dnn, Choice c, double price,
                    std::vector<Choice>& out) {
  const int fewest = c.replicas;
  if (fewest > kMaxReplicas) {
    c.queue_ms = kMaxQueueMs;
    out.push_back(c);
    return;
  }
  double best_ms = std::numeric_limits<double>::infinity();
  bool any = false;
  const int last = std::min(kMaxReplicas, fewest + std::max(kReplicaSteps, fewest));
  TailSeries tails = TailFrom(pipeline, dnn, c, fewest);
  for (int n = fewest; n <= last; ++n) {
    const TailLatency tail = tails.Next();
    const double ms = tail.TotalMs();
    if (!std::isfinite(ms)) continue;  // saturated: one more replica
    // Waits come in whole batches: a replica more may change nothing until a few more do.
    if (any && ms >= best_ms - 1e-9) continue;
    Choice more = c;
    more.replicas = n;
    more.queue_ms = std::min(ms - c.exec_ms, kMaxQueueMs);
    more.wait_ms = tail.wait_budget_ms;
    more.cost_micro = std::lround(n * price * 1e6);
    out.push_back(more);
    best_ms = ms;
    any = true;
    if (tail.queue_ms <= 0) break;  // nothing waits: more replicas buy nothing
  }
  if (!any) {  // saturated at every count tried: a choice that meets no SLO
    c.queue_ms = kMaxQueueMs;
    out.push_back(c);
  }
}

// How many choices Compile would make: every batch size of every profile under load.
size_t CountChoices(const model::Pipeline& pipeline, const std::vector<double>& rates) {
  size_t count = 0;
  for (size_t i = 0; i < pipeline.spec.tasks.size(); ++i) {
    const model::Variant& variant = pipeline.spec.tasks[i].MostAccurateVariant();
    for (const model::Profile& profile : variant.profiles) {
      count += rates[i] > 0 ? static_cast<size_t>(profile.latency.MaxBatch(variant.max_batch)) : 1;
    }
  }
  return count;
}

// Every (class, batch) choice of task i's most accurate variant, its front and its intensity.
// Without `batching` (a problem too large to search) only b = 1.
void CompileDnn(const model::Pipeline& pipeline, size_t i, bool batching, Dnn& dnn) {
  const model::PipelineSpec& spec = pipeline.spec;
  const model::Task& task = spec.tasks[i];
  dnn.task = task.name;
  const model::Variant& variant = task.MostAccurateVariant();
  dnn.variant = static_cast<int>(&variant - task.variants.data());
  for (const model::Edge& e : task.next) dnn.successors.push_back(pipeline.TaskIndex(e.task));

  for (const model::Profile& profile : variant.profiles) {
    const int hw = pipeline.HardwareClassIndex(profile.hardware_class);
    PIPESCALE_CHECK(hw >= 0);
    const double price = spec.hardware_classes[hw].cost_per_hour;
    // Without traffic a batch never fills, so only b = 1 is meaningful.
    const int max_batch =
        dnn.rate_rps > 0 && batching ? profile.latency.MaxBatch(variant.max_batch) : 1;
    for (int b = 1; b <= max_batch; ++b) {
      Choice c;
      c.hardware_class = hw;
      c.batch = b;
      c.exec_ms = profile.latency.Ms(b);
      c.queue_ms = b == 1 ? 0.0 : std::min(1000.0 * (b - 1) / dnn.rate_rps, kMaxQueueMs);
      c.wait_ms = c.queue_ms;
      c.replicas = ReplicasFor(dnn.rate_rps, c.exec_ms, b);
      c.cost_micro = std::lround(c.replicas * price * 1e6);
      if (spec.slo.model == model::LatencyModel::kMean) {
        dnn.choices.push_back(c);
      } else {
        AddTailChoices(pipeline, dnn, c, price, dnn.choices);
      }
    }
  }
  PIPESCALE_CHECK(!dnn.choices.empty());
  std::vector<double> prices;
  for (const model::HardwareClass& hw : spec.hardware_classes) prices.push_back(hw.cost_per_hour);
  dnn.front = ParetoFront(dnn.choices, prices);

  // Intensity: mean processing time over b = 1..16 on the fastest class (IV.D).
  double sum = 0;
  int count = 0;
  for (int b = 1; b <= 16; ++b) {
    double best = -1;
    for (const Choice& c : dnn.choices) {
      if (c.batch == b && (best < 0 || c.exec_ms < best)) best = c.exec_ms;
    }
    if (best < 0) break;
    sum += best;
    ++count;
  }
  dnn.intensity_ms = sum / count;
}

}  // namespace

Problem Compile(const model::Pipeline& pipeline, const model::Workload& workload) {
  const model::PipelineSpec& spec = pipeline.spec;
  Problem problem;
  problem.dnns.resize(spec.tasks.size());

  for (const model::Path& path : spec.paths) {
    Route route{.name = path.name,
                .dnns = {},
                .slo_ms = path.slo_ms,
                .rate_rps = PathRateRps(workload, path.name)};
    for (const std::string& task : path.tasks) {
      const int index = pipeline.TaskIndex(task);
      PIPESCALE_CHECK(index >= 0);
      route.dnns.push_back(index);
      problem.dnns[index].rate_rps += route.rate_rps;
      problem.dnns[index].routes.push_back(static_cast<int>(problem.routes.size()));
    }
    problem.routes.push_back(std::move(route));
  }

  std::vector<double> rates;
  for (const Dnn& dnn : problem.dnns) rates.push_back(dnn.rate_rps);
  const size_t choices = CountChoices(pipeline, rates);
  if (choices > kMaxChoices) {
    problem.too_large = StrFormat(
        "too large: %zu (hardware class, batch size) choices, more than %zu; lower "
        "batchSize.max or profile fewer hardware classes",
        choices, kMaxChoices);
  }
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    problem.dnns[i].dispersion = TaskDispersion(workload, spec.tasks[i].name);
    CompileDnn(pipeline, i, problem.too_large.empty(), problem.dnns[i]);
  }
  problem.topological_order = TopologicalOrder(pipeline);
  return problem;
}

double RouteLatencyMs(const Problem& problem, const Assignment& assignment, int route) {
  double total = 0;
  for (int d : problem.routes[route].dnns) total += assignment[d].LatencyMs();
  return total;
}

bool MeetsSlos(const Problem& problem, const Assignment& assignment, double band) {
  for (size_t r = 0; r < problem.routes.size(); ++r) {
    if (RouteLatencyMs(problem, assignment, static_cast<int>(r)) >
        problem.routes[r].slo_ms * (1 + band) + kEps) {
      return false;
    }
  }
  return true;
}

Objective Total(const Assignment& assignment) {
  Objective total;
  for (const Choice& c : assignment) total += c.Cost();
  return total;
}

Assignment Fastest(const Problem& problem) {
  Assignment fastest;
  for (const Dnn& d : problem.dnns) fastest.push_back(d.front.front());
  return fastest;
}

Objective LowerBound(const Problem& problem) {
  const Assignment fastest = Fastest(problem);
  Objective bound;
  for (size_t s = 0; s < problem.dnns.size(); ++s) {
    const Dnn& dnn = problem.dnns[s];
    double max_latency = std::numeric_limits<double>::infinity();
    for (int r : dnn.routes) {
      const double others = RouteLatencyMs(problem, fastest, r) - fastest[s].LatencyMs();
      max_latency = std::min(max_latency, problem.routes[r].slo_ms - others);
    }
    // Lexicographic order is compatible with addition, so the sum of per-DNN minima bounds
    // the sum of any feasible choices.
    Objective cheapest = Objective::Infinite();
    for (const Choice& c : dnn.front) {
      if (c.LatencyMs() > max_latency + kEps) break;
      cheapest = std::min(cheapest, c.Cost());
    }
    if (cheapest.IsInfinite()) return Objective::Infinite();
    bound += cheapest;
  }
  return bound;
}

std::vector<std::string> ImpossibleRoutes(const Problem& problem) {
  const Assignment fastest = Fastest(problem);
  std::vector<std::string> notes;
  for (size_t r = 0; r < problem.routes.size(); ++r) {
    const double best = RouteLatencyMs(problem, fastest, static_cast<int>(r));
    if (best > problem.routes[r].slo_ms + kEps) {
      notes.push_back(StrFormat("path %s: SLO %.1f ms is below the fastest possible %.1f ms",
                                problem.routes[r].name.c_str(), problem.routes[r].slo_ms, best));
    }
  }
  return notes;
}

Solution RefuseTooLarge(const Problem& problem) {
  return {.assignment = Fastest(problem),
          .status = model::SolveStatus::kInfeasible,
          .notes = {problem.too_large}};
}

std::vector<std::string> OverReplicaCap(const Problem& problem, const Assignment& assignment) {
  std::vector<std::string> reasons;
  for (size_t i = 0; i < problem.dnns.size(); ++i) {
    const Choice& c = assignment[i];
    if (c.replicas <= kMaxReplicas) continue;
    reasons.push_back(StrFormat(
        "task %s: %.4g rps need more than %d replicas (batch %d, %.4g ms); a plan asks for at "
        "most %d of a task",
        problem.dnns[i].task.c_str(), problem.dnns[i].rate_rps, kMaxReplicas, c.batch, c.exec_ms,
        kMaxReplicas));
  }
  return reasons;
}

// FA2 sizes each DNN alone, so a class's maxReplicas (the spec's, or the room the cluster has)
// is applied after: the largest tasks on an overfull class give up replicas first, down to one
// each. Returns the reasons, one per class that was over.
std::vector<std::string> ClampToClassLimits(const model::Pipeline& pipeline,
                                            std::vector<model::TaskPlan>& tasks) {
  std::vector<std::string> reasons;
  for (const model::HardwareClass& hw : pipeline.spec.hardware_classes) {
    if (!hw.max_replicas) continue;
    std::vector<model::TaskPlan*> on;
    int total = 0;
    for (model::TaskPlan& t : tasks) {
      if (t.hardware_class != hw.name) continue;
      on.push_back(&t);
      total += t.replicas;
    }
    if (total <= *hw.max_replicas) continue;
    const int wanted = total;
    while (total > *hw.max_replicas) {
      model::TaskPlan* largest = *std::max_element(
          on.begin(), on.end(), [](auto* a, auto* b) { return a->replicas < b->replicas; });
      if (largest->replicas <= 1) break;
      --largest->replicas;
      --total;
    }
    reasons.push_back(StrFormat("hardware class %s: the SLOs need %d replicas and it allows %d now",
                                hw.name.c_str(), wanted, *hw.max_replicas));
  }
  return reasons;
}

model::Plan ToPlan(const model::Pipeline& pipeline, const Problem& problem,
                   const Solution& solution, const std::string& optimizer) {
  const Assignment& assignment = solution.assignment;
  model::Plan plan;
  for (size_t i = 0; i < problem.dnns.size(); ++i) {
    const Dnn& dnn = problem.dnns[i];
    const Choice& c = assignment[i];
    plan.tasks.push_back({
        .task = dnn.task,
        .variant = pipeline.spec.tasks[i].variants[dnn.variant].name,
        .hardware_class = pipeline.spec.hardware_classes[c.hardware_class].name,
        .replicas = std::min(c.replicas, kMaxReplicas),  // the best effort stops at the cap
        .batch_size = c.batch,
        .latency_ms = c.exec_ms,
        .queue_ms = c.queue_ms,
        .batch_wait_ms = c.wait_ms,
        .load_rps = dnn.rate_rps,
    });
  }
  // FA2 and its baselines note only the paths that miss their SLO when infeasible, and the
  // tasks that would need more replicas than any plan asks for.
  std::vector<std::string> reasons = solution.status == model::SolveStatus::kInfeasible
                                         ? solution.notes
                                         : std::vector<std::string>{};
  std::vector<std::string> notes = solution.notes;
  for (std::string& reason : OverReplicaCap(problem, assignment)) {
    notes.push_back(reason);
    reasons.push_back(std::move(reason));
  }
  for (std::string& reason : ClampToClassLimits(pipeline, plan.tasks)) {
    notes.push_back(reason);
    reasons.push_back(std::move(reason));
  }
  // Under the tail model fewer replicas than chosen wait longer: the plan says what the replicas
  // it asks for would do.
  for (size_t i = 0; i < problem.dnns.size(); ++i) {
    model::TaskPlan& t = plan.tasks[i];
    if (pipeline.spec.slo.model != model::LatencyModel::kTail ||
        t.replicas == assignment[i].replicas) {
      continue;
    }
    const double ms =
        TailFrom(pipeline, problem.dnns[i], assignment[i], t.replicas).Next().TotalMs();
    t.queue_ms = std::isfinite(ms) ? std::min(ms - t.latency_ms, kMaxQueueMs) : kMaxQueueMs;
  }
  for (const Route& route : problem.routes) {
    double ms = 0;
    for (int d : route.dnns) ms += plan.tasks[d].latency_ms + plan.tasks[d].queue_ms;
    plan.paths.push_back({.name = route.name, .slo_ms = route.slo_ms, .predicted_latency_ms = ms});
  }
  plan.cost_per_hour = CostPerHour(pipeline, plan.tasks);
  plan.report = {.optimizer = optimizer,
                 .status = reasons.empty() ? solution.status : model::SolveStatus::kInfeasible,
                 .objective = {static_cast<double>(plan.TotalReplicas()), "replicas"},
                 .solve_ms = 0,
                 .notes = std::move(notes),
                 .reasons = std::move(reasons)};
  return plan;
}

}  // namespace pipescale::optimizer
