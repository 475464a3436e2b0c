#include "optimizer/pool.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>

#include "common/check.h"
#include "common/strings.h"
#include "optimizer/kairos.h"
#include "optimizer/mark.h"

namespace pipescale::optimizer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A class a task's variant can run on, and its latency there by batch size.
struct Candidate {
  int hw = 0;
  const model::Profile* profile = nullptr;
  double Ms(int batch) const { return profile->latency.Ms(batch); }
};

std::vector<Candidate> Classes(const model::Pipeline& p, const model::Variant& v, bool burst) {
  std::vector<Candidate> out;
  for (const model::Profile& profile : v.profiles) {
    const int hw = p.HardwareClassIndex(profile.hardware_class);
    if (hw < 0 || p.spec.hardware_classes[hw].burst_min_warm.has_value() != burst) continue;
    out.push_back({hw, &profile});
  }
  return out;
}

// The most replicas of one class any plan may ask for.
int ClassCap(const model::Pipeline& p, int hw, int limit) {
  const model::HardwareClass& c = p.spec.hardware_classes[hw];
  if (c.max_replicas) limit = std::min(limit, *c.max_replicas);
  if (p.spec.budget.max_replicas) limit = std::min(limit, *p.spec.budget.max_replicas);
  return limit;
}

std::string Key(const std::string& task, const std::string& hardware_class) {
  return task + "/" + hardware_class;
}

// Each path's predicted latency: per task, the slowest main class that runs replicas.
void FillPaths(const model::Pipeline& pipeline, model::Plan& plan) {
  for (const model::Path& path : pipeline.spec.paths) {
    double ms = 0;
    for (const std::string& task : path.tasks) {
      double worst = 0;
      for (const model::TaskPlan& t : plan.tasks) {
        const int hw = pipeline.HardwareClassIndex(t.hardware_class);
        if (t.task != task || t.replicas == 0 ||
            pipeline.spec.hardware_classes[hw].burst_min_warm) {
          continue;
        }
        worst = std::max(worst, t.latency_ms + t.queue_ms);
      }
      ms += worst;
    }
    plan.paths.push_back({path.name, path.slo_ms, ms});
  }
}

// A reason the plan is Infeasible: noted, and said in the Feasible condition.
void Shortfall(model::Plan& plan, std::string reason) {
  plan.report.status = model::SolveStatus::kInfeasible;
  plan.report.notes.push_back(reason);
  plan.report.reasons.push_back(std::move(reason));
}

void FillCost(const model::Pipeline& pipeline, model::Plan& plan) {
  plan.cost_per_hour = 0;
  for (const model::TaskPlan& t : plan.tasks) {
    const int hw = pipeline.HardwareClassIndex(t.hardware_class);
    plan.cost_per_hour += t.replicas * pipeline.spec.hardware_classes[hw].cost_per_hour;
  }
  plan.report.objective = plan.cost_per_hour;
}

// --- Kairos ---------------------------------------------------------------------------------

struct KairosTask {
  int task = 0;
  const model::Variant* variant = nullptr;
  std::vector<Candidate> classes;  // base first
  kairos::Profile profile;
  std::vector<double> prices;
  std::vector<kairos::Config> ranked;  // within the budget, highest bound first
  double qos_ms = 0;
  double rate = 0;
};

int Replicas(const kairos::Config& c) {
  int n = 0;
  for (int k : c.counts) n += k;
  return n;
}

// The cheapest configuration whose derated bound covers `demand`; fewer replicas, then the
// higher bound, on equal cost. nullptr when none within the budget does.
const kairos::Config* CheapestCovering(const KairosTask& t, double demand, double derate) {
  const kairos::Config* best = nullptr;
  for (const kairos::Config& c : t.ranked) {
    if (c.bound.qps * derate < demand - 1e-9) break;  // sorted by bound, highest first
    if (best == nullptr || c.cost_per_hour < best->cost_per_hour - 1e-12 ||
        (c.cost_per_hour <= best->cost_per_hour + 1e-12 && Replicas(c) < Replicas(*best))) {
      best = &c;
    }
  }
  return best;
}

}  // namespace

std::vector<double> TaskBudgetsMs(const model::Pipeline& pipeline, int batch) {
  const auto& spec = pipeline.spec;
  std::vector<double> fastest(spec.tasks.size(), 0);
  for (size_t t = 0; t < spec.tasks.size(); ++t) {
    const model::Variant& v = spec.tasks[t].MostAccurateVariant();
    double best = kInf;
    for (const Candidate& c : Classes(pipeline, v, false)) {
      best = std::min(best, c.Ms(std::min(batch, v.max_batch)));
    }
    fastest[t] = std::isfinite(best) ? best : 0;
  }
  std::vector<double> out(spec.tasks.size(), 0);
  for (const model::Path& path : spec.paths) {
    double sum = 0;
    for (const std::string& task : path.tasks) sum += fastest[pipeline.TaskIndex(task)];
    for (const std::string& task : path.tasks) {
      const int t = pipeline.TaskIndex(task);
      const double share = sum > 0 ? path.slo_ms * fastest[t] / sum
                                   : path.slo_ms / static_cast<double>(path.tasks.size());
      out[t] = out[t] == 0 ? share : std::min(out[t], share);
    }
  }
  return out;
}

std::vector<double> TaskRates(const model::Pipeline& pipeline, const model::Workload& workload) {
  std::vector<double> out(pipeline.spec.tasks.size(), 0);
  for (const model::Path& path : pipeline.spec.paths) {
    auto it = workload.path_rates_rps.find(path.name);
    const double rate = it == workload.path_rates_rps.end() ? 0 : std::max(0.0, it->second);
    for (const std::string& task : path.tasks) out[pipeline.TaskIndex(task)] += rate;
  }
  return out;
}

model::Plan SolveKairos(const model::Pipeline& pipeline, const model::Workload& workload,
                        const KairosOptions& options) {
  const auto& spec = pipeline.spec;
  model::Plan plan;
  plan.report.optimizer = "kairos";
  plan.report.status = model::SolveStatus::kOptimal;

  kairos::BatchMix mix;
  double total_weight = 0;
  for (const auto& q : spec.query_sizes) total_weight += q.weight;
  for (const auto& q : spec.query_sizes) mix.emplace_back(q.size, q.weight / total_weight);
  if (mix.empty()) mix = {{1, 1.0}};
  std::sort(mix.begin(), mix.end());
  const int largest = mix.back().first;

  const std::vector<double> budgets = TaskBudgetsMs(pipeline, largest);
  const std::vector<double> rates = TaskRates(pipeline, workload);
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
    int base = -1;
    double best = -1;
    for (size_t k = 0; k < classes.size(); ++k) {
      if (classes[k].Ms(largest) > t.qos_ms) continue;
      const double price = spec.hardware_classes[classes[k].hw].cost_per_hour;
      const double per_dollar = price > 0 ? 1000 / mean_ms(classes[k]) / price : kInf;
      if (per_dollar > best) {
        best = per_dollar;
        base = static_cast<int>(k);
      }
    }
    if (base < 0) {
      base = 0;
      for (size_t k = 1; k < classes.size(); ++k) {
        if (classes[k].Ms(largest) < classes[base].Ms(largest)) base = static_cast<int>(k);
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

    // Counts beyond what covers the demand alone add nothing; the budget bounds the rest.
    std::vector<int> caps;
    for (size_t k = 0; k < classes.size(); ++k) {
      const double price = spec.hardware_classes[classes[k].hw].cost_per_hour;
      t.prices.push_back(price);
      double useful = 0;
      if (k == 0) {
        useful = std::ceil(t.rate / (options.derate * t.profile.base_qps)) + 1;
      } else if (const auto& a = t.profile.auxiliary[k - 1]; a.qps > 0) {
        // Mixed with other auxiliary classes it counts at their threshold and share (Eq. 14):
        // the lowest rate and the largest share it can be given.
        double f = a.small_ratio, qps = a.qps;
        for (const auto& other : t.profile.auxiliary) f = std::max(f, other.small_ratio);
        for (const auto& [threshold, q] : a.qps_below) {
          if (q > 0) qps = std::min(qps, q);
        }
        useful = std::ceil(t.rate * f / (options.derate * qps)) + 1;
      }
      int cap = ClassCap(pipeline, classes[k].hw, options.max_per_class);
      cap = static_cast<int>(std::min<double>(cap, useful));
      if (price > 0 && std::isfinite(budget)) {
        cap = std::min(cap, static_cast<int>(std::floor(budget / price + 1e-9)));
      }
      caps.push_back(std::max(k == 0 ? 1 : 0, cap));
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
      const kairos::Config* c = CheapestCovering(t, share * t.rate, options.derate);
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
        served = std::min(served, options.derate * chosen[i]->bound.qps / tasks[i].rate);
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
  for (const auto& [path, rate] : workload.path_rates_rps) total_rate += std::max(0.0, rate);
  plan.upper_bound_qps = kInf;
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
    plan.pools.push_back(std::move(pool));
    plan.report.notes.push_back(StrFormat("task %s: %s, bound %.1f qps ($%.3f/h)", task.c_str(),
                                          rules[i].c_str(), c.bound.qps, c.cost_per_hour));
    const double visits = total_rate > 0 ? t.rate / total_rate : 1;
    if (visits > 0) plan.upper_bound_qps = std::min(plan.upper_bound_qps, c.bound.qps / visits);
  }
  if (!std::isfinite(plan.upper_bound_qps)) plan.upper_bound_qps = 0;
  FillPaths(pipeline, plan);
  FillCost(pipeline, plan);
  return plan;
}

// --- MArk -----------------------------------------------------------------------------------

namespace {

std::unique_ptr<mark::Forecaster> ForecasterFor(const model::PipelineSpec& spec) {
  switch (spec.forecast.method) {
    case model::ForecastMethod::kNone:
      return nullptr;
    case model::ForecastMethod::kEwma:
      return mark::Ewma();
    case model::ForecastMethod::kLinear:
      return mark::LinearTrend();
    case model::ForecastMethod::kHoltWinters: {
      // A daily season; with less than two days of history it falls back to the trend.
      const int period = std::max(2, static_cast<int>(std::lround(86400 / spec.interval_seconds)));
      return mark::HoltWinters(period);
    }
  }
  return nullptr;
}

// MArk's batching for one class at full load (Sec. 4.3): what one replica serves within the
// task's budget.
mark::BatchTuning Tune(const Candidate& c, double rt_max_ms, int max_batch) {
  return mark::TuneBatchAtFullLoad([c](int n) { return c.Ms(n); }, rt_max_ms, max_batch);
}

}  // namespace

double SlowestStartupSeconds(const model::PipelineSpec& spec) {
  double startup = 0;
  for (const auto& hw : spec.hardware_classes) {
    if (!hw.burst_min_warm) startup = std::max(startup, hw.startup_seconds);
  }
  return startup;
}

model::Plan SolveMark(const model::Pipeline& pipeline, const model::Workload& workload,
                      const MarkInput& input) {
  const auto& spec = pipeline.spec;
  model::Plan plan;
  plan.report.optimizer = "mark";
  plan.report.status = model::SolveStatus::kFeasible;  // greedy: no optimality claim
  const double step = spec.interval_seconds;
  plan.forecast_step_seconds = step;

  // Provision for the load when a replica launched now is ready.
  const int lead = static_cast<int>(std::ceil(SlowestStartupSeconds(spec) / step - 1e-9));
  const int horizon = static_cast<int>(std::ceil(spec.forecast.horizon_seconds / step - 1e-9));
  const int steps = std::max(horizon, lead) + 1;

  // Per path: now, then the forecast.
  const std::unique_ptr<mark::Forecaster> forecaster = ForecasterFor(spec);
  std::map<std::string, std::vector<double>> ahead;
  plan.forecast_rps.assign(steps, 0);
  for (const model::Path& path : spec.paths) {
    auto it = workload.path_rates_rps.find(path.name);
    const double now = it == workload.path_rates_rps.end() ? 0 : std::max(0.0, it->second);
    std::vector<double> series;
    if (auto h = input.history.find(path.name); h != input.history.end()) series = h->second;
    if (series.empty()) series = {now};
    std::vector<double> f = {now};
    const std::vector<double> rest =
        forecaster ? forecaster->Forecast(series, steps - 1) : std::vector<double>(steps - 1, now);
    f.insert(f.end(), rest.begin(), rest.end());
    // Never below the load already here: a smoothing forecaster sits at the mean of a noisy
    // series and would plan under every peak (bench/README.md, MArk against target tracking).
    for (double& x : f) x = std::max(x, now);
    for (int k = 0; k < steps; ++k) plan.forecast_rps[k] += f[k];
    ahead[path.name] = std::move(f);
  }

  const std::vector<double> budgets = TaskBudgetsMs(pipeline, 1);
  struct MarkTask {
    std::vector<Candidate> classes;
    std::vector<mark::InstanceClass> instances;
    std::vector<mark::BatchTuning> tunings;
    std::vector<int> counts;
    std::vector<double> load;
    std::vector<int> running;
  };
  std::vector<MarkTask> tasks(spec.tasks.size());
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    if (budgets[i] == 0) continue;
    const model::Task& task = spec.tasks[i];
    const model::Variant& v = task.MostAccurateVariant();
    MarkTask& t = tasks[i];
    t.load.assign(steps, 0);
    for (const model::Path& path : spec.paths) {
      if (std::find(path.tasks.begin(), path.tasks.end(), task.name) == path.tasks.end()) continue;
      for (int k = 0; k < steps; ++k) t.load[k] += ahead[path.name][k];
    }
    std::vector<int>& running = t.running;
    for (const Candidate& c : Classes(pipeline, v, false)) {
      const model::HardwareClass& hw = spec.hardware_classes[c.hw];
      if (c.Ms(1) > budgets[i]) continue;  // cannot meet RT_max even unbatched
      const mark::BatchTuning tuning = Tune(c, budgets[i], v.max_batch);
      t.classes.push_back(c);
      t.tunings.push_back(tuning);
      t.instances.push_back({.name = hw.name,
                             .capacity_rps = tuning.rate_rps,
                             .price_per_step = hw.cost_per_hour * step / 3600,
                             .launch_overhead = hw.cost_per_hour * hw.startup_seconds / 3600,
                             .max_instances = ClassCap(pipeline, c.hw, 1 << 20)});
      auto r = input.running.find(Key(task.name, hw.name));
      running.push_back(r == input.running.end() ? 0 : r->second);
    }
    if (t.classes.empty()) {
      // Nothing meets the budget: the fastest class unbatched, reported.
      const std::vector<Candidate> all = Classes(pipeline, v, false);
      const Candidate* fastest = &all[0];
      for (const Candidate& c : all) {
        if (c.Ms(1) < fastest->Ms(1)) fastest = &c;
      }
      const model::HardwareClass& hw = spec.hardware_classes[fastest->hw];
      t.classes.push_back(*fastest);
      t.tunings.push_back({1, 0, 1000 / fastest->Ms(1)});
      t.instances.push_back({hw.name, 1000 / fastest->Ms(1), hw.cost_per_hour * step / 3600,
                             hw.cost_per_hour * hw.startup_seconds / 3600,
                             ClassCap(pipeline, fastest->hw, 1 << 20)});
      auto r = input.running.find(Key(task.name, hw.name));
      running.push_back(r == input.running.end() ? 0 : r->second);
      Shortfall(
          plan,
          StrFormat("task %s: no class serves one request within its %.1f ms budget; %s takes "
                    "%.1f ms",
                    task.name.c_str(), budgets[i], hw.name.c_str(), fastest->Ms(1)));
    }
    t.counts = mark::Provision(t.load, t.instances, running, lead);
    // The cheapest per request, running first: the class a minimum or the guard adds.
    auto cheapest = [&]() {
      int best = -1;
      for (size_t k = 0; k < t.instances.size(); ++k) {
        if (t.counts[k] >= t.instances[k].max_instances) continue;
        const double per_request = t.instances[k].price_per_step / t.instances[k].capacity_rps;
        if (best < 0 ||
            per_request <
                t.instances[best].price_per_step / t.instances[best].capacity_rps - 1e-15) {
          best = static_cast<int>(k);
        }
      }
      return best;
    };
    int total = 0;
    double capacity = 0;
    for (size_t k = 0; k < t.counts.size(); ++k) {
      total += t.counts[k];
      capacity += t.counts[k] * t.instances[k].capacity_rps;
    }
    if (total == 0) {
      // Never scale a task to zero: a request would have nowhere to go.
      int keep = -1;
      for (size_t k = 0; k < running.size(); ++k) {
        if (running[k] > 0) keep = static_cast<int>(k);
      }
      if (keep < 0) keep = cheapest();
      if (keep >= 0) t.counts[keep] = 1;
    }
    const double peak = *std::max_element(t.load.begin() + std::min(lead, steps - 1), t.load.end());
    if (capacity + 1e-9 < peak && total > 0) {
      Shortfall(
          plan,
          StrFormat("task %s: every class at its maxReplicas serves %.1f of the forecast %.1f rps",
                    task.name.c_str(), capacity, peak));
    }
  }

  // The SLO guard: a late path gets replicas on its busiest task, whatever the forecast said.
  for (const model::Path& path : spec.paths) {
    if (!input.late_paths.contains(path.name)) continue;
    int busiest = -1;
    double most = -1;
    for (const std::string& name : path.tasks) {
      const int i = pipeline.TaskIndex(name);
      const MarkTask& t = tasks[i];
      double capacity = 0;
      for (size_t k = 0; k < t.counts.size(); ++k) {
        capacity += t.counts[k] * t.instances[k].capacity_rps;
      }
      const double utilization = capacity > 0 ? t.load[0] / capacity : kInf;
      if (utilization > most) {
        most = utilization;
        busiest = i;
      }
    }
    if (busiest < 0) continue;
    MarkTask& t = tasks[busiest];
    int best = -1;
    for (size_t k = 0; k < t.instances.size(); ++k) {
      if (t.counts[k] + input.guard_step > t.instances[k].max_instances) continue;
      if (best < 0 || t.instances[k].price_per_step / t.instances[k].capacity_rps <
                          t.instances[best].price_per_step / t.instances[best].capacity_rps) {
        best = static_cast<int>(k);
      }
    }
    if (best < 0) continue;
    // On top of what runs, whatever the forecast says: the forecast was wrong.
    for (size_t k = 0; k < t.counts.size(); ++k) t.counts[k] = std::max(t.counts[k], t.running[k]);
    t.counts[best] += input.guard_step;
    plan.report.notes.push_back(StrFormat(
        "SLO guard: path %s is late; +%d %s for task %s", path.name.c_str(), input.guard_step,
        t.instances[best].name.c_str(), spec.tasks[busiest].name.c_str()));
  }

  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    MarkTask& t = tasks[i];
    if (t.classes.empty()) continue;
    const model::Task& task = spec.tasks[i];
    const model::Variant& v = task.MostAccurateVariant();
    model::Pool pool{.task = task.name, .qos_ms = budgets[i]};
    // Capacity is planned at full load (N_batch), but a server that waits for its batch to
    // fill must batch for the arrivals it will see: the planned load shared by capacity, and
    // MArk's rule at that rate, never past N_batch.
    const double planned =
        *std::max_element(t.load.begin() + std::min(lead, steps - 1), t.load.end());
    double capacity = 0;
    for (size_t k = 0; k < t.counts.size(); ++k) {
      capacity += t.counts[k] * t.instances[k].capacity_rps;
    }
    for (size_t k = 0; k < t.classes.size(); ++k) {
      const Candidate c = t.classes[k];
      // A class the plan does not use batches nothing: replicas the cool-down still holds
      // get a share of the load too small to fill a batch in time.
      mark::BatchTuning b{.max_batch = 1, .wait_ms = 0, .rate_rps = 1000 / c.Ms(1)};
      if (t.counts[k] > 0 && capacity > 0) {
        const auto ms = [c](int n) { return c.Ms(n); };
        const double arrivals = planned * t.instances[k].capacity_rps / capacity;
        b = mark::TuneBatch(ms, budgets[i], arrivals, t.tunings[k].max_batch);
        auto running = input.running_batch.find(Key(task.name, t.instances[k].name));
        if (running != input.running_batch.end() && running->second != b.max_batch &&
            running->second <= t.tunings[k].max_batch && arrivals > 0) {
          if (auto kept = mark::TryBatch(ms, budgets[i], arrivals, running->second)) b = *kept;
        }
      }
      plan.tasks.push_back({.task = task.name,
                            .variant = v.name,
                            .hardware_class = t.instances[k].name,
                            .replicas = t.counts[k],
                            .batch_size = b.max_batch,
                            .latency_ms = t.classes[k].Ms(b.max_batch),
                            .queue_ms = b.wait_ms,
                            .load_rps = 0});
      pool.members.push_back({.hardware_class = t.instances[k].name,
                              .replicas = t.counts[k],
                              .max_query = b.max_batch,
                              .coefficient = 1,
                              .capacity_rps = t.instances[k].capacity_rps});
    }
    // Warm burst classes take what the main pool would serve late.
    for (const Candidate& c : Classes(pipeline, v, true)) {
      const model::HardwareClass& hw = spec.hardware_classes[c.hw];
      const mark::BatchTuning b =
          c.Ms(1) <= budgets[i] ? Tune(c, budgets[i], v.max_batch) : mark::BatchTuning{};
      plan.tasks.push_back({.task = task.name,
                            .variant = v.name,
                            .hardware_class = hw.name,
                            .replicas = *hw.burst_min_warm,
                            .batch_size = b.max_batch,
                            .latency_ms = c.Ms(b.max_batch),
                            .queue_ms = b.wait_ms});
      if (pool.spill_class.empty()) pool.spill_class = hw.name;
    }
    plan.pools.push_back(std::move(pool));
  }
  FillPaths(pipeline, plan);
  FillCost(pipeline, plan);
  return plan;
}

}  // namespace pipescale::optimizer
