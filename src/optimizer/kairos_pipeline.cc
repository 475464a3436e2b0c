#include "optimizer/kairos_pipeline.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "common/check.h"
#include "common/strings.h"
#include "optimizer/graph.h"
#include "optimizer/kairos.h"
#include "optimizer/pool.h"
#include "optimizer/problem.h"
#include "optimizer/tail.h"

namespace pipescale::optimizer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The work budget: count vectors enumerated over the whole pipeline. They multiply with the
// classes (12 classes of 10 replicas each are 3e12), so past it the auxiliary classes with the
// most counts give up theirs first.
constexpr double kMaxCountVectors = 200'000;

// Halves the largest auxiliary cap until the count vectors fit in `max_vectors`; whether any
// cap fell.
bool LimitCounts(std::vector<int>& caps, double max_vectors) {
  auto vectors = [&] {
    double n = 1;
    for (int cap : caps) n *= cap + 1.0;
    return n;
  };
  bool limited = false;
  while (vectors() > max_vectors) {
    auto largest = std::max_element(caps.begin() + 1, caps.end());
    if (largest == caps.end() || *largest == 0) {
      caps[0] = std::max(1, static_cast<int>(max_vectors) - 1);  // the base alone
    } else {
      *largest /= 2;
    }
    limited = true;
  }
  return limited;
}

struct KairosTask {
  int task = 0;
  const model::Variant* variant = nullptr;
  std::vector<Candidate> classes;  // base first
  kairos::Profile profile;
  std::vector<double> prices;
  std::vector<kairos::Config> ranked;  // within the budget, highest bound first
  double qos_ms = 0;
  double rate = 0;
  // The pool as the tail model takes it: base-class replicas serving the query mix one query at
  // a time (mean and squared coefficient of variation of a query's time), whose wait may take
  // what the largest query leaves of the QoS.
  TaskLoad tail;
  double max_wait_ms = 0;
};

// The share of a configuration's upper bound the plan counts on. Kairos's is a constant
// (measured QPS over the bound in its simulations); under the tail model it is what the pool,
// as many base replicas as its bound is worth, carries with its wait at the SLO's percentile
// within what the largest query leaves of the QoS (more replicas pool more and carry more each).
class Derating {
 public:
  Derating(const model::PipelineSpec& spec, double constant)
      : tail_(spec.slo.model == model::LatencyModel::kTail),
        percentile_(spec.slo.percentile),
        constant_(constant) {}

  double Of(const KairosTask& t, double bound_qps) const {
    if (!tail_) return constant_;
    if (!(t.tail.exec_ms > 0) || !std::isfinite(t.tail.exec_ms)) return 1;  // nothing queues
    const double worth = std::floor(bound_qps * t.tail.exec_ms / 1000 + 1e-9);
    const int replicas = static_cast<int>(std::clamp(worth, 1.0, double{kMaxReplicas}));
    auto [it, fresh] = shares_.try_emplace({t.task, replicas}, 0);
    if (fresh) {
      TaskLoad load = t.tail;
      load.replicas = replicas;
      it->second = UsableShare(load, t.max_wait_ms, percentile_);
    }
    return it->second;
  }

 private:
  bool tail_;
  double percentile_;
  double constant_;
  mutable std::map<std::pair<int, int>, double> shares_;  // (task, replicas) -> share
};

int Replicas(const kairos::Config& c) {
  int n = 0;
  for (int k : c.counts) n += k;
  return n;
}

// The cheapest configuration whose derated bound covers `demand`; fewer replicas, then the
// higher bound, on equal cost. nullptr when none within the budget does.
const kairos::Config* CheapestCovering(const KairosTask& t, double demand,
                                       const Derating& derating) {
  const kairos::Config* best = nullptr;
  for (const kairos::Config& c : t.ranked) {
    if (c.bound.qps < demand - 1e-9) break;  // sorted by bound, highest first; derated below
    if (c.bound.qps * derating.Of(t, c.bound.qps) < demand - 1e-9) continue;
    if (best == nullptr || c.cost_per_hour < best->cost_per_hour - 1e-12 ||
        (c.cost_per_hour <= best->cost_per_hour + 1e-12 && Replicas(c) < Replicas(*best))) {
      best = &c;
    }
  }
  return best;
}

// The base class serving `mix` one query at a time at `rate_rps`, as the tail model takes it.
TaskLoad QueryMixLoad(const Candidate& base, const kairos::BatchMix& mix, double rate_rps) {
  double mean = 0, square = 0;
  for (const auto& [size, p] : mix) {
    mean += p * base.Ms(size);
    square += p * base.Ms(size) * base.Ms(size);
  }
  return {.rate_rps = rate_rps,
          .exec_ms = mean,
          .exec_one_ms = mean,
          .service_cv2 = mean > 0 ? std::max(0.0, square / (mean * mean) - 1) : 0};
}

// What every step reads: the pipeline, the options, the query mix and the cost budget.
struct KairosContext {
  const model::Pipeline* pipeline = nullptr;
  const KairosOptions* options = nullptr;
  kairos::BatchMix mix;  // by query size, shares summing to 1
  int largest = 1;       // the largest query size
  double budget = kInf;  // $/h
  Derating derating;
};

// The configuration each task runs, and the rule that chose it, by position in the tasks.
struct Selection {
  std::vector<const kairos::Config*> configs;
  std::vector<std::string> rules;
};

// The spec's query sizes as shares of the queries, by size; one size-1 query when it has none.
kairos::BatchMix QueryMix(const model::PipelineSpec& spec) {
  kairos::BatchMix mix;
  double total_weight = 0;
  for (const auto& q : spec.query_sizes) total_weight += q.weight;
  for (const auto& q : spec.query_sizes) mix.emplace_back(q.size, q.weight / total_weight);
  if (mix.empty()) mix = {{1, 1.0}};
  std::sort(mix.begin(), mix.end());
  return mix;
}

// The query mix, the cost budget and the derating, the same for every task.
KairosContext ContextOf(const model::Pipeline& pipeline, const KairosOptions& options) {
  kairos::BatchMix mix = QueryMix(pipeline.spec);
  const int largest = mix.back().first;
  return {.pipeline = &pipeline,
          .options = &options,
          .mix = std::move(mix),
          .largest = largest,
          .budget = pipeline.spec.budget.cost_per_hour.value_or(kInf),
          .derating = Derating(pipeline.spec, options.derate)};
}

// Per class whether it may be the base. A class that may run no replica (maxReplicas 0: the
// cluster has no room for it) is not a base while another can be.
std::vector<bool> MayBeBase(const model::Pipeline& pipeline,
                            const std::vector<Candidate>& classes) {
  std::vector<bool> room(classes.size());
  for (size_t k = 0; k < classes.size(); ++k) room[k] = ClassCap(pipeline, classes[k].hw, 1) > 0;
  if (std::find(room.begin(), room.end(), true) == room.end()) room.assign(room.size(), true);
  return room;
}

// The base class serves every query size within QoS; of those, the most queries per $. -1
// when no class serves the largest query within QoS.
int MostPerDollar(const KairosContext& ctx, const std::vector<Candidate>& classes,
                  const std::vector<bool>& may_be_base, double qos_ms) {
  auto mean_ms = [&](const Candidate& c) {
    double ms = 0;
    for (const auto& [b, p] : ctx.mix) ms += p * c.Ms(b);
    return ms;
  };
  int base = -1;
  double best = -1;
  for (size_t k = 0; k < classes.size(); ++k) {
    if (classes[k].Ms(ctx.largest) > qos_ms || !may_be_base[k]) continue;
    const double price = ctx.pipeline->spec.hardware_classes[classes[k].hw].cost_per_hour;
    const double per_dollar = price > 0 ? 1000 / mean_ms(classes[k]) / price : kInf;
    if (per_dollar > best) {
      best = per_dollar;
      base = static_cast<int>(k);
    }
  }
  return base;
}

// The base class, first of the task's classes; when none serves the largest query within QoS,
// the fastest on it, reported.
void PutBaseFirst(const KairosContext& ctx, std::vector<Candidate> classes, KairosTask& t,
                  model::Plan& plan) {
  const model::PipelineSpec& spec = ctx.pipeline->spec;
  const std::vector<bool> may_be_base = MayBeBase(*ctx.pipeline, classes);
  int base = MostPerDollar(ctx, classes, may_be_base, t.qos_ms);
  if (base < 0) {
    for (size_t k = 0; k < classes.size(); ++k) {
      if (!may_be_base[k]) continue;
      if (base < 0 || classes[k].Ms(ctx.largest) < classes[base].Ms(ctx.largest)) {
        base = static_cast<int>(k);
      }
    }
    Shortfall(
        plan,
        StrFormat(
            "task %s: no class serves query size %d within its %.1f ms budget; %s, the fastest, "
            "takes %.1f ms",
            spec.tasks[t.task].name.c_str(), ctx.largest, t.qos_ms,
            spec.hardware_classes[classes[base].hw].name.c_str(), classes[base].Ms(ctx.largest)));
  }
  std::rotate(classes.begin(), classes.begin() + base, classes.begin() + base + 1);
  t.classes = std::move(classes);
}

// Kairos's profile of the task's classes on the query mix, their prices, and the pool as the
// tail model takes it.
void ProfileClasses(const KairosContext& ctx, KairosTask& t) {
  std::vector<std::pair<std::string, std::function<double(int)>>> aux;
  for (size_t k = 1; k < t.classes.size(); ++k) {
    const Candidate c = t.classes[k];
    aux.emplace_back(ctx.pipeline->spec.hardware_classes[c.hw].name,
                     [c](int b) { return c.Ms(b); });
  }
  const Candidate b = t.classes[0];
  t.profile = kairos::DeriveProfile([b](int n) { return b.Ms(n); }, aux, ctx.mix, t.qos_ms);
  t.tail = QueryMixLoad(b, ctx.mix, t.rate);
  t.max_wait_ms = std::max(0.0, t.qos_ms - b.Ms(ctx.largest));
  for (const Candidate& c : t.classes) {
    t.prices.push_back(ctx.pipeline->spec.hardware_classes[c.hw].cost_per_hour);
  }
}

// The replicas of class `k` that still add to covering the task's rate at `derate`.
double UsefulCount(const KairosTask& t, size_t k, double derate) {
  if (k == 0) return std::ceil(t.rate / (derate * t.profile.base_qps)) + 1;
  const auto& a = t.profile.auxiliary[k - 1];
  if (!(a.qps > 0)) return 0;
  // Mixed with other auxiliary classes it counts at their threshold and share (Eq. 14):
  // the lowest rate and the largest share it can be given.
  double f = a.small_ratio, qps = a.qps;
  for (const auto& other : t.profile.auxiliary) f = std::max(f, other.small_ratio);
  for (const auto& [threshold, q] : a.qps_below) {
    if (q > 0) qps = std::min(qps, q);
  }
  return std::ceil(t.rate * f / (derate * qps)) + 1;
}

// Counts beyond what covers the demand alone add nothing; the budget bounds the rest.
std::vector<int> CountCaps(const KairosContext& ctx, const KairosTask& t) {
  // The share the counts below are sized with: that of the fewest base replicas covering the
  // rate, the least any configuration that covers it is counted with.
  const double derate = ctx.derating.Of(t, std::max(t.rate, t.profile.base_qps));
  std::vector<int> caps;
  for (size_t k = 0; k < t.classes.size(); ++k) {
    const double price = t.prices[k];
    int cap = ClassCap(*ctx.pipeline, t.classes[k].hw, ctx.options->max_per_class);
    cap = static_cast<int>(std::min<double>(cap, UsefulCount(t, k, derate)));
    if (price > 0 && std::isfinite(ctx.budget)) {
      cap = std::min(cap, static_cast<int>(std::floor(ctx.budget / price + 1e-9)));
    }
    caps.push_back(std::max(k == 0 ? 1 : 0, cap));
  }
  return caps;
}

// The task's configurations within the counts and the budget, highest bound first, their
// count vectors held to the work budget.
void RankWithinBudget(const KairosContext& ctx, std::vector<int> caps, KairosTask& t,
                      model::Plan& plan) {
  const model::PipelineSpec& spec = ctx.pipeline->spec;
  if (LimitCounts(caps, std::max(64.0, kMaxCountVectors / spec.tasks.size()))) {
    plan.report.status = model::SolveStatus::kFeasible;  // the optimum may lie beyond
    plan.report.notes.push_back(
        StrFormat("task %s: the count vectors exceed the work budget (%.0f for the pipeline): "
                  "searched with fewer replicas of the auxiliary classes",
                  QuoteUserText(spec.tasks[t.task].name).c_str(), kMaxCountVectors));
  }
  t.ranked = kairos::RankConfigurations(t.profile, t.prices, caps, ctx.budget);
  if (t.ranked.empty()) {
    // Not even one base replica fits the budget: plan it anyway; the reconciler's budget
    // guard decides what may run.
    std::vector<int> one(t.classes.size(), 0);
    one[0] = 1;
    t.ranked.push_back({one, t.prices[0], kairos::UpperBound(t.profile, one)});
  }
}

// Each task on a path, profiled over its most accurate variant's classes, with its
// configurations ranked.
std::vector<KairosTask> ProfileTasks(const KairosContext& ctx, const model::Workload& workload,
                                     model::Plan& plan) {
  const model::Pipeline& pipeline = *ctx.pipeline;
  const std::vector<double> budgets = TaskBudgetsMs(pipeline, ctx.largest);
  const std::vector<double> rates = TaskRatesRps(pipeline, workload);
  std::vector<KairosTask> tasks;
  for (size_t i = 0; i < pipeline.spec.tasks.size(); ++i) {
    if (budgets[i] == 0) continue;  // on no path: nothing to serve
    KairosTask t{.task = static_cast<int>(i),
                 .variant = &pipeline.spec.tasks[i].MostAccurateVariant(),
                 .qos_ms = budgets[i],
                 .rate = rates[i]};
    std::vector<Candidate> classes = Classes(pipeline, *t.variant, false);
    PIPESCALE_CHECK(!classes.empty());  // api validation
    PutBaseFirst(ctx, std::move(classes), t, plan);
    ProfileClasses(ctx, t);
    RankWithinBudget(ctx, CountCaps(ctx, t), t, plan);
    tasks.push_back(std::move(t));
  }
  return tasks;
}

// Cheapest covering configurations for `share` of every task's demand, if affordable.
std::vector<const kairos::Config*> Choose(const KairosContext& ctx,
                                          const std::vector<KairosTask>& tasks, double share,
                                          bool within_budget) {
  const model::Budget& budget = ctx.pipeline->spec.budget;
  std::vector<const kairos::Config*> out;
  double cost = 0;
  int replicas = 0;
  for (const KairosTask& t : tasks) {
    const kairos::Config* c = CheapestCovering(t, share * t.rate, ctx.derating);
    if (c == nullptr) return {};
    out.push_back(c);
    cost += c->cost_per_hour;
    replicas += Replicas(*c);
  }
  const bool fits =
      cost <= ctx.budget + 1e-9 && (!budget.max_replicas || replicas <= *budget.max_replicas);
  return fits || !within_budget ? out : std::vector<const kairos::Config*>{};
}

// Kairos's own pick for a single task: the rule over the configurations within the budget.
Selection KairosPick(const KairosTask& t) {
  Selection s;
  const kairos::Pick pick = kairos::PickConfiguration(t.ranked);
  for (const auto& c : t.ranked) {
    if (c.counts == pick.config.counts) s.configs = {&c};
  }
  s.rules = {pick.rule == kairos::Pick::Rule::kTopThreeShareBase
                 ? "Kairos pick: the top three share the base count"
                 : "Kairos pick: least squared distance to the top ten"};
  return s;
}

// The largest share of the demand that every task covers together within the budget.
Selection LargestShare(const KairosContext& ctx, const std::vector<KairosTask>& tasks) {
  double lo = 0, hi = 1;
  for (int i = 0; i < 50; ++i) {
    const double mid = (lo + hi) / 2;
    (Choose(ctx, tasks, mid, true).empty() ? hi : lo) = mid;
  }
  return {Choose(ctx, tasks, lo, false),
          std::vector<std::string>(tasks.size(), "largest share of the demand within the budget")};
}

// The share of the demand the chosen configurations serve: the least over the tasks.
double ServedFraction(const KairosContext& ctx, const std::vector<KairosTask>& tasks,
                      const std::vector<const kairos::Config*>& chosen) {
  double served = 1;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].rate > 0) {
      const double bound = chosen[i]->bound.qps;
      served = std::min(served, ctx.derating.Of(tasks[i], bound) * bound / tasks[i].rate);
    }
  }
  return std::clamp(served, 0.0, 1.0);
}

// What binds when the demand is not covered: the budget as set ("budget: $2.500/h and 3
// replicas", "budget: no cost budget and 3 replicas"), else the classes' maxReplicas.
std::string ShortfallNote(const model::Budget& budget, double served_fraction) {
  if (!budget.cost_per_hour && !budget.max_replicas) {
    return StrFormat("the classes' maxReplicas cover %.1f%% of the demand", 100 * served_fraction);
  }
  const std::string cost =
      budget.cost_per_hour ? StrFormat("$%.3f/h", *budget.cost_per_hour) : "no cost budget";
  const std::string replicas =
      budget.max_replicas ? std::to_string(*budget.max_replicas) : "any number of";
  return StrFormat("budget: %s and %s replicas cover %.1f%% of the demand", cost.c_str(),
                   replicas.c_str(), 100 * served_fraction);
}

// Per task the cheapest configuration covering its demand within the budget; when the budget
// binds, Kairos's pick or the largest share of the demand, with what is served reported.
Selection SelectConfigurations(const KairosContext& ctx, const std::vector<KairosTask>& tasks,
                               model::Plan& plan) {
  std::vector<const kairos::Config*> covering = Choose(ctx, tasks, 1, true);
  if (!covering.empty()) {
    return {std::move(covering),
            std::vector<std::string>(tasks.size(), "cheapest covering the demand")};
  }
  Selection s = tasks.size() == 1 ? KairosPick(tasks[0]) : LargestShare(ctx, tasks);
  plan.served_fraction = ServedFraction(ctx, tasks, s.configs);
  Shortfall(plan, ShortfallNote(ctx.pipeline->spec.budget, plan.served_fraction));
  return s;
}

// What a class of the pool serves: the largest query, and one replica's rate.
struct ClassReach {
  int max_query = 0;
  double capacity_rps = 0;
};

// The largest query a class serves: all of them on the base, those below s elsewhere.
ClassReach ReachOf(const KairosContext& ctx, const KairosTask& t, size_t k) {
  if (k == 0) return {.max_query = ctx.largest, .capacity_rps = t.profile.base_qps};
  const auto& a = t.profile.auxiliary[k - 1];
  int max_query = 0;
  for (const auto& [b, p] : ctx.mix) {
    if (b < a.violating_batch) max_query = b;
  }
  return {.max_query = max_query, .capacity_rps = a.qps};
}

// The task at configuration `c` as the plan's rows, and as a pool for the router.
model::Pool PlanPool(const KairosContext& ctx, const KairosTask& t, const kairos::Config& c,
                     model::Plan& plan) {
  const model::PipelineSpec& spec = ctx.pipeline->spec;
  const std::string& task = spec.tasks[t.task].name;
  // C_j against the fastest class on the largest query, so that it stays in (0, 1] even
  // when a slower class is the base because it serves every query for less.
  double fastest_largest = kInf;
  for (const Candidate& cls : t.classes) {
    fastest_largest = std::min(fastest_largest, cls.Ms(ctx.largest));
  }
  model::Pool pool{.task = task,
                   .qos_ms = t.qos_ms,
                   .members = {},
                   .spill_class = "",
                   .upper_bound_qps = c.bound.qps};
  for (size_t k = 0; k < t.classes.size(); ++k) {
    const Candidate& cls = t.classes[k];
    const ClassReach reach = ReachOf(ctx, t, k);
    const int batch = std::max(1, reach.max_query);
    plan.tasks.push_back({.task = task,
                          .variant = t.variant->name,
                          .hardware_class = spec.hardware_classes[cls.hw].name,
                          .replicas = c.counts[k],
                          .batch_size = batch,
                          .latency_ms = cls.Ms(batch)});
    pool.members.push_back(
        {.hardware_class = spec.hardware_classes[cls.hw].name,
         .replicas = c.counts[k],
         .max_query = reach.max_query,
         .coefficient = kairos::HeterogeneityCoefficient(fastest_largest, cls.Ms(ctx.largest)),
         .capacity_rps = reach.capacity_rps});
  }
  return pool;
}

// Each task's rows, pool and note at its chosen configuration, and the pipeline's upper bound:
// the least over the tasks of a task's bound over its share of the requests.
void PlanPools(const KairosContext& ctx, const model::Workload& workload,
               const std::vector<KairosTask>& tasks, const Selection& chosen, model::Plan& plan) {
  model::PoolPlan& pools = *plan.pools();
  double total_rate = 0;
  for (double rate : PathRatesRps(*ctx.pipeline, workload)) total_rate += rate;
  double upper_bound_qps = kInf;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const KairosTask& t = tasks[i];
    const kairos::Config& c = *chosen.configs[i];
    pools.pools.push_back(PlanPool(ctx, t, c, plan));
    plan.report.notes.push_back(StrFormat("task %s: %s, bound %.1f qps planned at %.0f%% ($%.3f/h)",
                                          ctx.pipeline->spec.tasks[t.task].name.c_str(),
                                          chosen.rules[i].c_str(), c.bound.qps,
                                          100 * ctx.derating.Of(t, c.bound.qps), c.cost_per_hour));
    const double visits = total_rate > 0 ? t.rate / total_rate : 1;
    if (visits > 0) upper_bound_qps = std::min(upper_bound_qps, c.bound.qps / visits);
  }
  pools.upper_bound_qps = std::isfinite(upper_bound_qps) ? upper_bound_qps : 0;
}

}  // namespace

model::Plan SolveKairos(const model::Pipeline& pipeline, const model::Workload& workload,
                        const KairosOptions& options) {
  model::Plan plan;
  plan.report.optimizer = "kairos";
  plan.report.status = model::SolveStatus::kOptimal;
  plan.detail.emplace<model::PoolPlan>();
  const KairosContext ctx = ContextOf(pipeline, options);
  const std::vector<KairosTask> tasks = ProfileTasks(ctx, workload, plan);
  const Selection chosen = SelectConfigurations(ctx, tasks, plan);
  PlanPools(ctx, workload, tasks, chosen, plan);
  FillPathsAndCost(pipeline, plan);
  return plan;
}

}  // namespace pipescale::optimizer
