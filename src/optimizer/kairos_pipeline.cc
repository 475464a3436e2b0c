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

}  // namespace

model::Plan SolveKairos(const model::Pipeline& pipeline, const model::Workload& workload,
                        const KairosOptions& options) {
  const auto& spec = pipeline.spec;
  model::Plan plan;
  plan.report.optimizer = "kairos";
  plan.report.status = model::SolveStatus::kOptimal;
  model::PoolPlan& pools = plan.detail.emplace<model::PoolPlan>();

  kairos::BatchMix mix;
  double total_weight = 0;
  for (const auto& q : spec.query_sizes) total_weight += q.weight;
  for (const auto& q : spec.query_sizes) mix.emplace_back(q.size, q.weight / total_weight);
  if (mix.empty()) mix = {{1, 1.0}};
  std::sort(mix.begin(), mix.end());
  const int largest = mix.back().first;

  const Derating derating(spec, options.derate);
  const std::vector<double> budgets = TaskBudgetsMs(pipeline, largest);
  const std::vector<double> rates = TaskRatesRps(pipeline, workload);
  const double budget = spec.budget.cost_per_hour.value_or(kInf);

  std::vector<KairosTask> tasks;
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    if (budgets[i] == 0) continue;  // on no path: nothing to serve
    KairosTask t{.task = static_cast<int>(i),
                 .variant = &spec.tasks[i].MostAccurateVariant(),
                 .qos_ms = budgets[i],
                 .rate = rates[i]};
    std::vector<Candidate> classes = Classes(pipeline, *t.variant, false);
    PIPESCALE_CHECK(!classes.empty());  // api validation
    auto mean_ms = [&](const Candidate& c) {
      double ms = 0;
      for (const auto& [b, p] : mix) ms += p * c.Ms(b);
      return ms;
    };
    // The base class serves every query size within QoS; of those, the most queries per $.
    // A class that may run no replica (maxReplicas 0: the cluster has no room for it) is not
    // a base while another can be.
    auto room = [&](size_t k) { return ClassCap(pipeline, classes[k].hw, 1) > 0; };
    bool any_room = false;
    for (size_t k = 0; k < classes.size(); ++k) any_room = any_room || room(k);
    int base = -1;
    double best = -1;
    for (size_t k = 0; k < classes.size(); ++k) {
      if (classes[k].Ms(largest) > t.qos_ms || (any_room && !room(k))) continue;
      const double price = spec.hardware_classes[classes[k].hw].cost_per_hour;
      const double per_dollar = price > 0 ? 1000 / mean_ms(classes[k]) / price : kInf;
      if (per_dollar > best) {
        best = per_dollar;
        base = static_cast<int>(k);
      }
    }
    if (base < 0) {
      for (size_t k = 0; k < classes.size(); ++k) {
        if (any_room && !room(k)) continue;
        if (base < 0 || classes[k].Ms(largest) < classes[base].Ms(largest)) {
          base = static_cast<int>(k);
        }
      }
      Shortfall(
          plan,
          StrFormat(
              "task %s: no class serves query size %d within its %.1f ms budget; %s, the fastest, "
              "takes %.1f ms",
              spec.tasks[i].name.c_str(), largest, t.qos_ms,
              spec.hardware_classes[classes[base].hw].name.c_str(), classes[base].Ms(largest)));
    }
    std::rotate(classes.begin(), classes.begin() + base, classes.begin() + base + 1);
    t.classes = classes;

    std::vector<std::pair<std::string, std::function<double(int)>>> aux;
    for (size_t k = 1; k < classes.size(); ++k) {
      const Candidate c = classes[k];
      aux.emplace_back(spec.hardware_classes[c.hw].name, [c](int b) { return c.Ms(b); });
    }
    const Candidate b = classes[0];
    t.profile = kairos::DeriveProfile([b](int n) { return b.Ms(n); }, aux, mix, t.qos_ms);
    t.tail = QueryMixLoad(b, mix, t.rate);
    t.max_wait_ms = std::max(0.0, t.qos_ms - b.Ms(largest));
    // The share the counts below are sized with: that of the fewest base replicas covering the
    // rate, the least any configuration that covers it is counted with.
    const double derate = derating.Of(t, std::max(t.rate, t.profile.base_qps));

    // Counts beyond what covers the demand alone add nothing; the budget bounds the rest.
    std::vector<int> caps;
    for (size_t k = 0; k < classes.size(); ++k) {
      const double price = spec.hardware_classes[classes[k].hw].cost_per_hour;
      t.prices.push_back(price);
      double useful = 0;
      if (k == 0) {
        useful = std::ceil(t.rate / (derate * t.profile.base_qps)) + 1;
      } else if (const auto& a = t.profile.auxiliary[k - 1]; a.qps > 0) {
        // Mixed with other auxiliary classes it counts at their threshold and share (Eq. 14):
        // the lowest rate and the largest share it can be given.
        double f = a.small_ratio, qps = a.qps;
        for (const auto& other : t.profile.auxiliary) f = std::max(f, other.small_ratio);
        for (const auto& [threshold, q] : a.qps_below) {
          if (q > 0) qps = std::min(qps, q);
        }
        useful = std::ceil(t.rate * f / (derate * qps)) + 1;
      }
      int cap = ClassCap(pipeline, classes[k].hw, options.max_per_class);
      cap = static_cast<int>(std::min<double>(cap, useful));
      if (price > 0 && std::isfinite(budget)) {
        cap = std::min(cap, static_cast<int>(std::floor(budget / price + 1e-9)));
      }
      caps.push_back(std::max(k == 0 ? 1 : 0, cap));
    }
    if (LimitCounts(caps, std::max(64.0, kMaxCountVectors / spec.tasks.size()))) {
      plan.report.status = model::SolveStatus::kFeasible;  // the optimum may lie beyond
      plan.report.notes.push_back(
          StrFormat("task %s: the count vectors exceed the work budget (%.0f for the pipeline): "
                    "searched with fewer replicas of the auxiliary classes",
                    QuoteUserText(spec.tasks[i].name).c_str(), kMaxCountVectors));
    }
    t.ranked = kairos::RankConfigurations(t.profile, t.prices, caps, budget);
    if (t.ranked.empty()) {
      // Not even one base replica fits the budget: plan it anyway; the reconciler's budget
      // guard decides what may run.
      std::vector<int> one(classes.size(), 0);
      one[0] = 1;
      t.ranked.push_back({one, t.prices[0], kairos::UpperBound(t.profile, one)});
    }
    tasks.push_back(std::move(t));
  }

  // Cheapest covering configurations for `share` of every task's demand, if affordable.
  auto choose = [&](double share, bool within_budget) {
    std::vector<const kairos::Config*> out;
    double cost = 0;
    int replicas = 0;
    for (const KairosTask& t : tasks) {
      const kairos::Config* c = CheapestCovering(t, share * t.rate, derating);
      if (c == nullptr) return std::vector<const kairos::Config*>{};
      out.push_back(c);
      cost += c->cost_per_hour;
      replicas += Replicas(*c);
    }
    const bool fits = cost <= budget + 1e-9 &&
                      (!spec.budget.max_replicas || replicas <= *spec.budget.max_replicas);
    return fits || !within_budget ? out : std::vector<const kairos::Config*>{};
  };

  std::vector<const kairos::Config*> chosen = choose(1, true);
  std::vector<std::string> rules(tasks.size(), "cheapest covering the demand");
  if (chosen.empty()) {
    if (tasks.size() == 1) {
      const kairos::Pick pick = kairos::PickConfiguration(tasks[0].ranked);
      for (const auto& c : tasks[0].ranked) {
        if (c.counts == pick.config.counts) chosen = {&c};
      }
      rules[0] = pick.rule == kairos::Pick::Rule::kTopThreeShareBase
                     ? "Kairos pick: the top three share the base count"
                     : "Kairos pick: least squared distance to the top ten";
    } else {
      // The largest share of the demand that every task covers together within the budget.
      double lo = 0, hi = 1;
      for (int i = 0; i < 50; ++i) {
        const double mid = (lo + hi) / 2;
        (choose(mid, true).empty() ? hi : lo) = mid;
      }
      chosen = choose(lo, false);
      rules.assign(tasks.size(), "largest share of the demand within the budget");
    }
    double served = 1;
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].rate > 0) {
        const double bound = chosen[i]->bound.qps;
        served = std::min(served, derating.Of(tasks[i], bound) * bound / tasks[i].rate);
      }
    }
    plan.served_fraction = std::clamp(served, 0.0, 1.0);
    Shortfall(
        plan,
        std::isfinite(budget) || spec.budget.max_replicas
            ? StrFormat("budget: $%.3f/h and %s replicas cover %.1f%% of the demand", budget,
                        spec.budget.max_replicas ? std::to_string(*spec.budget.max_replicas).c_str()
                                                 : "any",
                        100 * plan.served_fraction)
            : StrFormat("the classes' maxReplicas cover %.1f%% of the demand",
                        100 * plan.served_fraction));
  }

  double total_rate = 0;
  for (double rate : PathRatesRps(pipeline, workload)) total_rate += rate;
  double upper_bound_qps = kInf;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const KairosTask& t = tasks[i];
    const kairos::Config& c = *chosen[i];
    const std::string& task = spec.tasks[t.task].name;
    // C_j against the fastest class on the largest query, so that it stays in (0, 1] even
    // when a slower class is the base because it serves every query for less.
    double fastest_largest = kInf;
    for (const Candidate& cls : t.classes) {
      fastest_largest = std::min(fastest_largest, cls.Ms(largest));
    }
    model::Pool pool{.task = task,
                     .qos_ms = t.qos_ms,
                     .members = {},
                     .spill_class = "",
                     .upper_bound_qps = c.bound.qps};
    for (size_t k = 0; k < t.classes.size(); ++k) {
      const Candidate& cls = t.classes[k];
      // The largest query a class serves: all of them on the base, those below s elsewhere.
      int max_query = largest;
      double capacity = t.profile.base_qps;
      if (k > 0) {
        const auto& a = t.profile.auxiliary[k - 1];
        max_query = 0;
        for (const auto& [b, p] : mix) {
          if (b < a.violating_batch) max_query = b;
        }
        capacity = a.qps;
      }
      const int batch = std::max(1, max_query);
      plan.tasks.push_back({.task = task,
                            .variant = t.variant->name,
                            .hardware_class = spec.hardware_classes[cls.hw].name,
                            .replicas = c.counts[k],
                            .batch_size = batch,
                            .latency_ms = cls.Ms(batch)});
      pool.members.push_back(
          {.hardware_class = spec.hardware_classes[cls.hw].name,
           .replicas = c.counts[k],
           .max_query = max_query,
           .coefficient = kairos::HeterogeneityCoefficient(fastest_largest, cls.Ms(largest)),
           .capacity_rps = capacity});
    }
    pools.pools.push_back(std::move(pool));
    plan.report.notes.push_back(StrFormat("task %s: %s, bound %.1f qps planned at %.0f%% ($%.3f/h)",
                                          task.c_str(), rules[i].c_str(), c.bound.qps,
                                          100 * derating.Of(t, c.bound.qps), c.cost_per_hour));
    const double visits = total_rate > 0 ? t.rate / total_rate : 1;
    if (visits > 0) upper_bound_qps = std::min(upper_bound_qps, c.bound.qps / visits);
  }
  pools.upper_bound_qps = std::isfinite(upper_bound_qps) ? upper_bound_qps : 0;
  FillPathsAndCost(pipeline, plan);
  return plan;
}

}  // namespace pipescale::optimizer
