#include "optimizer/mark_pipeline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "common/strings.h"
#include "optimizer/graph.h"
#include "optimizer/mark.h"
#include "optimizer/pool.h"
#include "optimizer/problem.h"
#include "optimizer/tail.h"

namespace pipescale::optimizer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The forecasts scored for how far to trust the next one: half an hour at MArk's minute.
constexpr int kTrustWindow = 30;

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

// The batch sizes the tail model weighs, largest first: every size to 16, then steps of a
// quarter (each size costs a tail evaluation that grows with it; the throughput of neighbouring
// large batches differs by little).
std::vector<int> BatchCandidates(int most) {
  std::vector<int> out;
  for (int b = 1; b <= most; b = b < 16 ? b + 1 : std::max(b + 1, b * 5 / 4)) out.push_back(b);
  if (out.back() != most) out.push_back(most);
  std::reverse(out.begin(), out.end());
  return out;
}

// A class's batch at full load and the share of a replica's throughput there that provisioning
// counts on.
struct Counted {
  mark::BatchTuning tuning;
  double share = 1;
};

// MArk's: the batch whose fill and run at full load fit the budget, every replica full. Under
// the tail model, the batch whose replicas carry the most each at the task's peak load, where
// what the batch's fill and run at the SLO's percentile leave of the budget bounds its wait
// behind other batches (optimizer/tail.h).
Counted CountedTuning(const model::Pipeline& pipeline, const model::Variant& v, const Candidate& c,
                      double budget_ms, double peak_rps) {
  const double percentile = pipeline.spec.slo.percentile;
  if (pipeline.spec.slo.model != model::LatencyModel::kTail || !(peak_rps > 0)) {
    return {Tune(c, budget_ms, v.max_batch), 1};
  }
  Counted best{Tune(c, budget_ms, 1), 0};
  for (int b : BatchCandidates(std::max(1, v.max_batch))) {
    const TaskLoad load = LoadOf(v, *c.profile, b, peak_rps, 1);
    const TailLatency alone = TaskTailLatency(load, percentile);
    const double max_queue_ms = budget_ms - alone.fill_ms - alone.exec_ms;
    if (b > 1 && max_queue_ms < 0) continue;
    const double full_rps = 1000.0 * b / c.Ms(b);
    const double share = ShareAtLoad(load, std::max(0.0, max_queue_ms), kMaxReplicas, percentile);
    if (share * full_rps > best.share * best.tuning.rate_rps + 1e-12) {
      best = {{.max_batch = b, .wait_ms = b > 1 ? alone.wait_budget_ms : 0, .rate_rps = full_rps},
              share};
    }
  }
  // A pool whose wait fits at no count still serves: counted at a sliver, it is planned at
  // its classes' limits and reported short.
  best.share = std::max(best.share, 0.01);
  return best;
}

// The forecast's steps, one per interval: provisioning covers `steps` of them (now first), from
// `lead` on.
struct Horizon {
  double step_seconds = 0;
  int lead = 0;
  int steps = 0;
};

// What every step reads besides the task: the pipeline, what runs now and the forecast's steps.
struct MarkContext {
  const model::Pipeline* pipeline = nullptr;
  const PlannerInput* input = nullptr;
  Horizon horizon;
};

// A task's pool as MArk provisions it: per main class its batch tuning and instance count.
struct MarkTask {
  const model::Task* task = nullptr;
  const model::Variant* variant = nullptr;  // the task's most accurate
  double budget_ms = 0;
  std::vector<Candidate> classes;
  std::vector<mark::InstanceClass> instances;
  std::vector<mark::BatchTuning> tunings;
  std::vector<int> counts;
  std::vector<double> load;  // per forecast step
  std::vector<int> running;
};

// Per path, its load at each forecast step.
using PathLoads = std::map<std::string, std::vector<double>>;

// What the task's replicas serve together as provisioned.
double Capacity(const MarkTask& t) {
  double capacity = 0;
  for (size_t k = 0; k < t.counts.size(); ++k) {
    capacity += t.counts[k] * t.instances[k].capacity_rps;
  }
  return capacity;
}

// The peak of the load over the steps from the one when a replica launched now is ready.
double PlannedPeak(const std::vector<double>& load, const Horizon& horizon) {
  return *std::max_element(load.begin() + std::min(horizon.lead, horizon.steps - 1), load.end());
}

// Under the tail model, replicas for each class that the provisioning runs hotter than its
// latency at the SLO's percentile allows (its count is below the one its share was taken at,
// and fewer replicas pool less), while the class has room. The router spreads the load over
// the pool by capacity, so a replica added anywhere lightens every class.
void HoldTail(const model::Pipeline& pipeline, double load_rps, MarkTask& t,
              std::vector<std::string>& notes) {
  if (pipeline.spec.slo.model != model::LatencyModel::kTail) return;
  auto late = [&](size_t k) {
    const double class_rps = load_rps * t.counts[k] * t.instances[k].capacity_rps / Capacity(t);
    const TaskLoad load =
        LoadOf(*t.variant, *t.classes[k].profile, t.tunings[k].max_batch, class_rps, t.counts[k]);
    return !(TaskTailLatency(load, pipeline.spec.slo.percentile).TotalMs() <= t.budget_ms);
  };
  for (size_t k = 0; k < t.counts.size(); ++k) {
    if (t.counts[k] == 0) continue;
    bool is_late = late(k);
    while (is_late && t.counts[k] < t.instances[k].max_instances) {
      ++t.counts[k];
      is_late = late(k);
    }
    if (is_late) {
      notes.push_back(
          StrFormat("tail: task %s on %s is late at p%g with all %d replicas it may run",
                    QuoteUserText(t.task->name).c_str(), t.instances[k].name.c_str(),
                    pipeline.spec.slo.percentile, t.counts[k]));
    }
  }
}

// The batch `replicas` replicas of a class run at `class_rps`, up to the full-load batch `most`,
// the running batch first when it qualifies (a change restarts pods). MArk's rule at the
// arrivals one replica sees; under the tail model the largest batch whose latency at the SLO's
// percentile fits the budget, fill, queue and run (optimizer/tail.h).
mark::BatchTuning ClassBatch(const model::Pipeline& pipeline, const model::Variant& v,
                             const Candidate& c, double budget_ms, double class_rps, int replicas,
                             int most, int running) {
  const auto ms = [c](int n) { return c.Ms(n); };
  if (pipeline.spec.slo.model != model::LatencyModel::kTail) {
    const double arrivals = class_rps / replicas;
    mark::BatchTuning b = mark::TuneBatch(ms, budget_ms, arrivals, most);
    if (running > 0 && running != b.max_batch && running <= most && arrivals > 0) {
      if (auto kept = mark::TryBatch(ms, budget_ms, arrivals, running)) b = *kept;
    }
    return b;
  }
  auto fits = [&](int b) -> std::optional<mark::BatchTuning> {
    const TailLatency tail = TaskTailLatency(LoadOf(v, *c.profile, b, class_rps, replicas),
                                             pipeline.spec.slo.percentile);
    // Batch 1 too: a running batch of 1 that the load has outgrown is no batch to keep.
    if (!(tail.TotalMs() <= budget_ms)) return std::nullopt;
    return mark::BatchTuning{.max_batch = b,
                             .wait_ms = b > 1 ? tail.wait_budget_ms : 0,
                             .rate_rps = 1000.0 * b / c.Ms(b)};
  };
  if (running > 0 && running <= most) {
    if (auto kept = fits(running)) return *kept;
  }
  for (int b : BatchCandidates(most)) {
    if (b == 1) break;
    if (auto tuned = fits(b)) return *tuned;
  }
  // Unbatched, unless the replicas cannot carry the load so: then the batch they were
  // provisioned with.
  const TailLatency one =
      TaskTailLatency(LoadOf(v, *c.profile, 1, class_rps, replicas), pipeline.spec.slo.percentile);
  const int b = std::isfinite(one.TotalMs()) ? 1 : most;
  return {.max_batch = b, .wait_ms = 0, .rate_rps = 1000.0 * b / c.Ms(b)};
}

// The forecast's steps for the spec's interval, its horizon and its classes' startups.
Horizon HorizonOf(const model::PipelineSpec& spec) {
  const double step = spec.interval_seconds;
  // Provision for the load when a replica launched now is ready.
  const int lead = static_cast<int>(std::ceil(SlowestStartupSeconds(spec) / step - 1e-9));
  const int horizon = static_cast<int>(std::ceil(spec.forecast.horizon_seconds / step - 1e-9));
  return {.step_seconds = step, .lead = lead, .steps = std::max(horizon, lead) + 1};
}

// The forecast's rises above `now`, each kept in the share its earlier rises came
// (mark::ForecastTrust); what it left out is noted.
void TrustForecast(const MarkContext& ctx, const mark::Forecaster& forecaster,
                   const std::string& path, const std::vector<double>& series, double now,
                   std::vector<double>& f, std::vector<std::string>& notes) {
  const double trust =
      mark::ForecastTrust(forecaster, series, ctx.horizon.lead, ctx.horizon.steps, kTrustWindow);
  const double peak = *std::max_element(f.begin(), f.end());
  if (trust < 1 && peak > now) {
    notes.push_back(
        StrFormat("path %s: %.0f%% of the forecast's rises came over the "
                  "last %d steps; provisioning for that share of its rise to %.1f rps",
                  path.c_str(), 100 * trust, kTrustWindow, peak));
  }
  for (double& x : f) x = now + trust * (x - now);
}

// Per path: now, then the forecast. `total` gets their sum at each step.
PathLoads ForecastPaths(const MarkContext& ctx, const model::Workload& workload,
                        std::vector<double>& total, std::vector<std::string>& notes) {
  const model::PipelineSpec& spec = ctx.pipeline->spec;
  const int steps = ctx.horizon.steps;
  const std::unique_ptr<mark::Forecaster> forecaster = ForecasterFor(spec);
  PathLoads ahead;
  total.assign(steps, 0);
  for (const model::Path& path : spec.paths) {
    const double now = PathRateRps(workload, path.name);
    std::vector<double> series;
    if (auto h = ctx.input->history.find(path.name); h != ctx.input->history.end()) {
      series = h->second;
    }
    if (series.empty()) series = {now};
    std::vector<double> f = {now};
    const std::vector<double> rest =
        forecaster ? forecaster->Forecast(series, steps - 1) : std::vector<double>(steps - 1, now);
    f.insert(f.end(), rest.begin(), rest.end());
    // Never below the load already here: a smoothing forecaster sits at the mean of a noisy
    // series and would plan under every peak (bench/README.md, MArk against target tracking).
    for (double& x : f) x = std::max(x, now);
    if (forecaster) TrustForecast(ctx, *forecaster, path.name, series, now, f, notes);
    for (int k = 0; k < steps; ++k) total[k] += f[k];
    ahead[path.name] = std::move(f);
  }
  return ahead;
}

// The task's load at each step: the paths through it, summed.
std::vector<double> TaskLoadAhead(const model::PipelineSpec& spec, const model::Task& task,
                                  const PathLoads& ahead, int steps) {
  std::vector<double> load(steps, 0);
  for (const model::Path& path : spec.paths) {
    if (std::find(path.tasks.begin(), path.tasks.end(), task.name) == path.tasks.end()) continue;
    for (int k = 0; k < steps; ++k) load[k] += ahead.at(path.name)[k];
  }
  return load;
}

// Adds class `c` to the task's pool: its batch at full load, what provisioning counts one
// replica of it to serve, its price and launch overhead, and what runs of it now.
void AddClass(const MarkContext& ctx, const Candidate& c, const mark::BatchTuning& tuning,
              double capacity_rps, MarkTask& t) {
  const model::Pipeline& pipeline = *ctx.pipeline;
  const model::HardwareClass& hw = pipeline.spec.hardware_classes[c.hw];
  const double step = ctx.horizon.step_seconds;
  t.classes.push_back(c);
  t.tunings.push_back(tuning);
  t.instances.push_back({.name = hw.name,
                         .capacity_rps = capacity_rps,
                         .price_per_step = hw.cost_per_hour * step / 3600,
                         .launch_overhead = hw.cost_per_hour * hw.startup_seconds / 3600,
                         .max_instances = ClassCap(pipeline, c.hw, kMaxReplicas)});
  auto r = ctx.input->running.find(PoolKey(t.task->name, hw.name));
  t.running.push_back(r == ctx.input->running.end() ? 0 : r->second);
}

// The main classes that serve one request within the task's budget, each tuned for the task's
// peak load.
void AddMainClasses(const MarkContext& ctx, MarkTask& t, std::vector<std::string>& notes) {
  const model::Pipeline& pipeline = *ctx.pipeline;
  const double peak_rps = *std::max_element(t.load.begin(), t.load.end());
  for (const Candidate& c : Classes(pipeline, *t.variant, false)) {
    const model::HardwareClass& hw = pipeline.spec.hardware_classes[c.hw];
    if (c.Ms(1) > t.budget_ms) continue;  // cannot meet RT_max even unbatched
    const auto [tuning, share] = CountedTuning(pipeline, *t.variant, c, t.budget_ms, peak_rps);
    if (share < 1) {
      notes.push_back(StrFormat(
          "tail: task %s on %s planned with %.0f%% of each replica's %.1f rps at batch %d",
          QuoteUserText(t.task->name).c_str(), hw.name.c_str(), 100 * share, tuning.rate_rps,
          tuning.max_batch));
    }
    AddClass(ctx, c, tuning, share * tuning.rate_rps, t);
  }
}

// Nothing meets the budget: the fastest class unbatched, reported. False when the variant runs
// on burst classes only, which leaves the task without a pool.
bool AddFastestClass(const MarkContext& ctx, MarkTask& t, model::Plan& plan) {
  const std::vector<Candidate> all = Classes(*ctx.pipeline, *t.variant, false);
  if (all.empty()) {
    Shortfall(plan, StrFormat("task %s: its variant runs on burst classes only, which take "
                              "spill and are never provisioned",
                              QuoteUserText(t.task->name).c_str()));
    return false;
  }
  const Candidate* fastest = all.data();
  for (const Candidate& c : all) {
    if (c.Ms(1) < fastest->Ms(1)) fastest = &c;
  }
  const model::HardwareClass& hw = ctx.pipeline->spec.hardware_classes[fastest->hw];
  const double rate_rps = 1000 / fastest->Ms(1);
  AddClass(ctx, *fastest, {.max_batch = 1, .wait_ms = 0, .rate_rps = rate_rps}, rate_rps, t);
  Shortfall(plan,
            StrFormat("task %s: no class serves one request within its %.1f ms budget; %s takes "
                      "%.1f ms",
                      t.task->name.c_str(), t.budget_ms, hw.name.c_str(), fastest->Ms(1)));
  return true;
}

// The cheapest per request, running first: the class a minimum or the guard adds. A class
// qualifies while `added` more replicas stay within its limit; a later class must be cheaper by
// more than `tie`. -1 when none qualifies.
int CheapestWithRoom(const MarkTask& t, int added, double tie) {
  int best = -1;
  for (size_t k = 0; k < t.instances.size(); ++k) {
    if (t.counts[k] + added > t.instances[k].max_instances) continue;
    const double per_request = t.instances[k].price_per_step / t.instances[k].capacity_rps;
    if (best < 0 ||
        per_request < t.instances[best].price_per_step / t.instances[best].capacity_rps - tie) {
      best = static_cast<int>(k);
    }
  }
  return best;
}

// Never scale a task to zero: a request would have nowhere to go.
void KeepOne(MarkTask& t) {
  int keep = -1;
  for (size_t k = 0; k < t.running.size(); ++k) {
    if (t.running[k] > 0) keep = static_cast<int>(k);
  }
  if (keep < 0) keep = CheapestWithRoom(t, 1, 1e-15);
  if (keep >= 0) t.counts[keep] = 1;
}

// MArk's greedy provisioning of the task's classes for its forecast, at least one replica, and
// the tail model's hold; what stays short of the forecast is reported.
void ProvisionCounts(const MarkContext& ctx, MarkTask& t, model::Plan& plan) {
  bool exhausted = false;
  t.counts = mark::Provision(t.load, t.instances, t.running, ctx.horizon.lead, &exhausted);
  if (exhausted) {
    Shortfall(plan, StrFormat("task %s: provisioning passed its work budget; the forecast may "
                              "stay unmet",
                              QuoteUserText(t.task->name).c_str()));
  }
  int total = 0;
  for (int count : t.counts) total += count;
  const double capacity = Capacity(t);
  if (total == 0) KeepOne(t);
  const double peak = PlannedPeak(t.load, ctx.horizon);
  HoldTail(*ctx.pipeline, peak, t, plan.report.notes);
  if (capacity + 1e-9 < peak && total > 0) {
    Shortfall(
        plan,
        StrFormat("task %s: every class at its maxReplicas serves %.1f of the forecast %.1f rps",
                  t.task->name.c_str(), capacity, peak));
  }
}

// Each task on a path as MArk provisions it, by task index; a task on no path, or with no main
// class, has no classes.
std::vector<MarkTask> ProvisionTasks(const MarkContext& ctx, const PathLoads& ahead,
                                     model::Plan& plan) {
  const model::PipelineSpec& spec = ctx.pipeline->spec;
  const std::vector<double> budgets = TaskBudgetsMs(*ctx.pipeline, 1);
  std::vector<MarkTask> tasks(spec.tasks.size());
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    if (budgets[i] == 0) continue;
    MarkTask& t = tasks[i];
    t.task = &spec.tasks[i];
    t.variant = &t.task->MostAccurateVariant();
    t.budget_ms = budgets[i];
    t.load = TaskLoadAhead(spec, *t.task, ahead, ctx.horizon.steps);
    AddMainClasses(ctx, t, plan.report.notes);
    if (t.classes.empty() && !AddFastestClass(ctx, t, plan)) continue;
    ProvisionCounts(ctx, t, plan);
  }
  return tasks;
}

// The task of `path` whose replicas run the hottest now; -1 when the path has no task.
int BusiestTask(const model::Pipeline& pipeline, const model::Path& path,
                const std::vector<MarkTask>& tasks) {
  int busiest = -1;
  double most = -1;
  for (const std::string& name : path.tasks) {
    const int i = pipeline.TaskIndex(name);
    const MarkTask& t = tasks[i];
    const double capacity = Capacity(t);
    const double utilization = capacity > 0 ? t.load[0] / capacity : kInf;
    if (utilization > most) {
      most = utilization;
      busiest = i;
    }
  }
  return busiest;
}

// The SLO guard: a late path gets replicas on its busiest task, whatever the forecast said.
void GuardLatePaths(const MarkContext& ctx, std::vector<MarkTask>& tasks,
                    std::vector<std::string>& notes) {
  const model::Pipeline& pipeline = *ctx.pipeline;
  const PlannerInput& input = *ctx.input;
  for (const model::Path& path : pipeline.spec.paths) {
    if (!input.late_paths.contains(path.name)) continue;
    const int busiest = BusiestTask(pipeline, path, tasks);
    if (busiest < 0) continue;
    MarkTask& t = tasks[busiest];
    const int best = CheapestWithRoom(t, input.guard_step, 0);
    if (best < 0) continue;
    // On top of what runs, whatever the forecast says: the forecast was wrong.
    for (size_t k = 0; k < t.counts.size(); ++k) t.counts[k] = std::max(t.counts[k], t.running[k]);
    t.counts[best] += input.guard_step;
    notes.push_back(StrFormat("SLO guard: path %s is late; +%d %s for task %s", path.name.c_str(),
                              input.guard_step, t.instances[best].name.c_str(),
                              pipeline.spec.tasks[busiest].name.c_str()));
  }
}

// The batch main class `k` runs at for the load planned on the task, `planned_rps`, which the
// router shares over the classes by capacity.
mark::BatchTuning MainBatch(const MarkContext& ctx, const MarkTask& t, size_t k, double planned_rps,
                            double capacity_rps) {
  const Candidate c = t.classes[k];
  // A class the plan does not use batches nothing: replicas the cool-down still holds
  // get a share of the load too small to fill a batch in time.
  mark::BatchTuning b{.max_batch = 1, .wait_ms = 0, .rate_rps = 1000 / c.Ms(1)};
  if (t.counts[k] > 0 && capacity_rps > 0) {
    const double class_rps = planned_rps * t.counts[k] * t.instances[k].capacity_rps / capacity_rps;
    const std::map<std::string, int>& running_batch = ctx.input->running_batch;
    auto running = running_batch.find(PoolKey(t.task->name, t.instances[k].name));
    b = ClassBatch(*ctx.pipeline, *t.variant, c, t.budget_ms, class_rps, t.counts[k],
                   t.tunings[k].max_batch, running == running_batch.end() ? 0 : running->second);
  }
  return b;
}

// The plan's rows for the task's main classes, and the pool's members.
void AddMainRows(const MarkContext& ctx, const MarkTask& t, model::Plan& plan, model::Pool& pool) {
  // Capacity is planned at full load (N_batch), but a server that waits for its batch to
  // fill must batch for the arrivals it will see: the planned load shared by capacity, and
  // MArk's rule at that rate, never past N_batch.
  const double planned = PlannedPeak(t.load, ctx.horizon);
  const double capacity = Capacity(t);
  for (size_t k = 0; k < t.classes.size(); ++k) {
    const mark::BatchTuning b = MainBatch(ctx, t, k, planned, capacity);
    plan.tasks.push_back(
        {.task = t.task->name,
         .variant = t.variant->name,
         .hardware_class = t.instances[k].name,
         .replicas = t.counts[k],
         .batch_size = b.max_batch,
         .latency_ms = t.classes[k].Ms(b.max_batch),
         .queue_ms = b.wait_ms,
         .batch_wait_ms = b.wait_ms,
         // The planned peak, spread as the router spreads it: by capacity.
         .load_rps =
             capacity > 0 ? planned * t.counts[k] * t.instances[k].capacity_rps / capacity : 0});
    pool.members.push_back({.hardware_class = t.instances[k].name,
                            .replicas = t.counts[k],
                            .max_query = b.max_batch,
                            .coefficient = 1,
                            .capacity_rps = t.instances[k].capacity_rps});
  }
}

// Warm burst classes take what the main pool would serve late.
void AddBurstRows(const MarkContext& ctx, const MarkTask& t, model::Plan& plan, model::Pool& pool) {
  const model::Pipeline& pipeline = *ctx.pipeline;
  const model::Variant& v = *t.variant;
  for (const Candidate& c : Classes(pipeline, v, true)) {
    const model::HardwareClass& hw = pipeline.spec.hardware_classes[c.hw];
    const mark::BatchTuning b =
        c.Ms(1) <= t.budget_ms ? Tune(c, t.budget_ms, v.max_batch) : mark::BatchTuning{};
    plan.tasks.push_back({.task = t.task->name,
                          .variant = v.name,
                          .hardware_class = hw.name,
                          .replicas = *hw.burst_min_warm,
                          .batch_size = b.max_batch,
                          .latency_ms = c.Ms(b.max_batch),
                          .queue_ms = b.wait_ms,
                          .batch_wait_ms = b.wait_ms});
    if (pool.spill_class.empty()) pool.spill_class = hw.name;
  }
}

// The provisioned task as the plan's rows, and as a pool for the router.
model::Pool PlanPool(const MarkContext& ctx, const MarkTask& t, model::Plan& plan) {
  model::Pool pool{.task = t.task->name, .qos_ms = t.budget_ms};
  AddMainRows(ctx, t, plan, pool);
  AddBurstRows(ctx, t, plan, pool);
  return pool;
}

}  // namespace

model::Plan SolveMark(const model::Pipeline& pipeline, const model::Workload& workload,
                      const PlannerInput& input) {
  const MarkContext ctx{
      .pipeline = &pipeline, .input = &input, .horizon = HorizonOf(pipeline.spec)};
  model::Plan plan;
  plan.report.optimizer = "mark";
  plan.report.status = model::SolveStatus::kFeasible;  // greedy: no optimality claim
  model::PoolPlan& pools = plan.detail.emplace<model::PoolPlan>();
  pools.forecast_step_seconds = ctx.horizon.step_seconds;
  const PathLoads ahead = ForecastPaths(ctx, workload, pools.forecast_rps, plan.report.notes);
  std::vector<MarkTask> tasks = ProvisionTasks(ctx, ahead, plan);
  GuardLatePaths(ctx, tasks, plan.report.notes);
  for (const MarkTask& t : tasks) {
    if (!t.classes.empty()) pools.pools.push_back(PlanPool(ctx, t, plan));
  }
  FillPathsAndCost(pipeline, plan);
  return plan;
}

}  // namespace pipescale::optimizer
