// The baselines as the systems compute them. Each rule below names the file and function of
// the source it ports: kubernetes/kubernetes v1.30 pkg/controller/podautoscaler (HPA), kedacore
// keda pkg/scalers (KEDA) and knative/serving pkg/autoscaler (KPA). Times are the gym's
// seconds; a sample is the second that ends at its time.
#include "gym/autoscaler.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "optimizer/hpa.h"

namespace pipescale::gym {
namespace {

// ---- Shared: per-task targets and the samples of a recent window.

// None of the ports may scale to zero here (HPA's minReplicas 0 is behind a feature gate, KEDA's
// activation is its own loop, KPA's scale-to-zero is disabled), so every task keeps a pod.
TaskTarget Sanitized(TaskTarget target) {
  target.min_replicas = std::max(1, target.min_replicas);
  target.max_replicas = std::max(target.max_replicas, target.min_replicas);
  return target;
}

int Clamp(int replicas, const TaskTarget& target) {
  return std::min(std::max(replicas, target.min_replicas), target.max_replicas);
}

class Targets {
 public:
  explicit Targets(std::map<std::string, TaskTarget> targets) : targets_(std::move(targets)) {
    for (auto& [task, target] : targets_) target = Sanitized(target);
  }
  const TaskTarget& Of(const std::string& task) const {
    auto it = targets_.find(task);
    return it == targets_.end() ? default_ : it->second;
  }

 private:
  std::map<std::string, TaskTarget> targets_;
  TaskTarget default_ = Sanitized({});
};

// What the samples of a window add up to.
struct Totals {
  int samples = 0;
  double ready = 0;  // pod-seconds Ready
  double busy = 0;   // pod-seconds serving
  double concurrency = 0;
  double arrivals = 0;
};

double Mean(double total, int samples) { return samples > 0 ? total / samples : 0; }

// A task's samples of the last `keep_s` seconds, oldest first.
class History {
 public:
  explicit History(double keep_s) : keep_s_(keep_s) {}

  void Add(double now_s, const TaskSample& sample) {
    samples_.emplace_back(now_s, sample);
    while (samples_.front().first <= now_s - keep_s_) samples_.pop_front();
  }

  // The samples that ended in (now_s - window_s, now_s].
  Totals Sum(double now_s, double window_s) const {
    Totals totals;
    for (const auto& [at_s, sample] : samples_) {
      if (at_s <= now_s - window_s || at_s > now_s) continue;
      ++totals.samples;
      totals.ready += sample.ready;
      totals.busy += sample.busy;
      totals.concurrency += sample.concurrency;
      totals.arrivals += sample.arrivals_rps;
    }
    return totals;
  }

  std::optional<TaskSample> Latest() const {
    if (samples_.empty()) return std::nullopt;
    return samples_.back().second;
  }

 private:
  double keep_s_;
  std::deque<std::pair<double, TaskSample>> samples_;
};

// ---- The HPA's controller loop, shared by MakeHpa and MakeKeda (KEDA creates an HPA).

// kube-controller-manager flag defaults: --horizontal-pod-autoscaler-sync-period (and
// optimizer::kHpaTolerance, --horizontal-pod-autoscaler-tolerance's); the downscale
// stabilization is the target's (the behaviour's window, or the flag's 300 s default that
// maybeInitScaleDownStabilizationWindow in horizontal.go puts into the behaviour).
constexpr double kHpaSyncS = 15;
using optimizer::kHpaTolerance;
// pkg/apis/autoscaling/v2/defaults.go: no scale-up stabilization.
constexpr double kScaleUpWindowS = 0;

struct Policy {
  bool percent = false;  // HPAScalingPolicy type Percent, else Pods
  int value = 0;
  double period_s = 0;
};

// defaults.go (SetDefaults_HorizontalPodAutoscalerBehavior): scale-up takes the larger of +4
// pods and +100% per 15 s, scale-down may remove 100% per 15 s; both select Max.
constexpr std::array<Policy, 2> kScaleUpPolicies = {{{false, 4, 15}, {true, 100, 15}}};
constexpr std::array<Policy, 1> kScaleDownPolicies = {{{true, 100, 15}}};
constexpr double kLongestPolicyS = 15;

struct Stamped {
  double at_s = 0;
  int replicas = 0;
};

struct HpaTask {
  explicit HpaTask(double keep_s) : history(keep_s) {}
  History history;
  bool synced = false;                   // recordInitialRecommendation has run
  std::vector<Stamped> recommendations;  // unstabilized, as HorizontalController.recommendations
  std::vector<Stamped> scale_ups;        // replicas added per rescale (scaleUpEvents)
  std::vector<Stamped> scale_downs;      // replicas removed per rescale (scaleDownEvents)
  std::optional<double> cached_rate;     // KEDA with useCachedMetrics
  double polled_at_s = 0;
};

// getReplicasChangePerPeriod: the changes made after now - period (strictly: a rescale exactly
// one period ago no longer counts).
int ChangeInPeriod(const std::vector<Stamped>& events, double now_s, double period_s) {
  int change = 0;
  for (const Stamped& event : events) {
    if (event.at_s > now_s - period_s) change += event.replicas;
  }
  return change;
}

// calculateScaleUpLimitWithScalingRules: per policy, from the replicas at the period's start;
// Percent rounds up so that a small Deployment can grow at all; selectPolicy Max.
int ScaleUpLimit(const HpaTask& task, double now_s, int current) {
  int limit = INT_MIN;
  for (const Policy& policy : std::span<const Policy>(kScaleUpPolicies)) {
    const int start = current - ChangeInPeriod(task.scale_ups, now_s, policy.period_s) +
                      ChangeInPeriod(task.scale_downs, now_s, policy.period_s);
    const int proposed = policy.percent
                             ? static_cast<int>(std::ceil(start * (1 + policy.value / 100.0)))
                             : start + policy.value;
    limit = std::max(limit, proposed);
  }
  return limit;
}

// calculateScaleDownLimitWithBehaviors: Percent truncates (int32 of a float64); selectPolicy
// Max takes the lowest floor. With the default 100% it is 0: min_replicas bounds a scale-down.
int ScaleDownLimit(const HpaTask& task, double now_s, int current) {
  int limit = INT_MAX;
  for (const Policy& policy : std::span<const Policy>(kScaleDownPolicies)) {
    const int start = current - ChangeInPeriod(task.scale_ups, now_s, policy.period_s) +
                      ChangeInPeriod(task.scale_downs, now_s, policy.period_s);
    const int proposed = policy.percent ? static_cast<int>(start * (1 - policy.value / 100.0))
                                        : start - policy.value;
    limit = std::min(limit, proposed);
  }
  return limit;
}

// stabilizeRecommendationWithBehaviors: the current replicas raised to the lowest
// recommendation of the scale-up window and lowered to the highest of the scale-down window,
// the new recommendation included; then the new one is recorded and those older than both
// windows are dropped (the source reuses one such slot; none of them is read again either way).
int Stabilize(HpaTask& task, double now_s, double down_window_s, int current, int desired) {
  int up = desired;
  int down = desired;
  for (const Stamped& rec : task.recommendations) {
    if (rec.at_s > now_s - kScaleUpWindowS) up = std::min(up, rec.replicas);
    if (rec.at_s > now_s - down_window_s) down = std::max(down, rec.replicas);
  }
  const double obsolete_s = now_s - std::max(kScaleUpWindowS, down_window_s);
  std::erase_if(task.recommendations, [&](const Stamped& rec) { return rec.at_s < obsolete_s; });
  task.recommendations.push_back({now_s, desired});
  return std::min(std::max(current, up), down);
}

// convertDesiredReplicasWithBehaviorRate: a scale-up stops at the policies' limit (never below
// current) and maxReplicas; a scale-down at the policies' floor (never above current) and
// minReplicas.
int LimitRate(const HpaTask& task, double now_s, const TaskTarget& target, int current,
              int desired) {
  if (desired > current) {
    const int limit = std::max(ScaleUpLimit(task, now_s, current), current);
    return std::min(desired, std::min(target.max_replicas, limit));
  }
  if (desired < current) {
    const int floor = std::min(ScaleDownLimit(task, now_s, current), current);
    return std::max(desired, std::max(target.min_replicas, floor));
  }
  return desired;
}

// storeScaleEvent: events older than the longest policy period are never read again.
void StoreScaleEvent(HpaTask& task, double now_s, int before, int after) {
  std::vector<Stamped>& events = after > before ? task.scale_ups : task.scale_downs;
  std::erase_if(events, [&](const Stamped& event) { return event.at_s < now_s - kLongestPolicyS; });
  events.push_back({now_s, std::abs(after - before)});
}

class HpaController : public Autoscaler {
 public:
  HpaController(std::map<std::string, TaskTarget> targets, double keep_s)
      : targets_(std::move(targets)), keep_s_(keep_s) {}

  double PeriodSeconds() const override { return kHpaSyncS; }

  void Observe(double now_s, const std::string& task, const TaskSample& sample) override {
    Task(task).history.Add(now_s, sample);
  }

  // reconcileAutoscaler (horizontal.go): replicas outside [min, max] are brought back without
  // reading the metric; else the metric's proposal goes through
  // normalizeDesiredReplicasWithBehaviors (stabilize, then limit the rate). autoscaling/v2
  // always defaults a behaviour, so the behaviour-less normalizeDesiredReplicas never runs.
  int Desired(double now_s, const std::string& name, int current) override {
    HpaTask& task = Task(name);
    const TaskTarget& target = targets_.Of(name);
    if (!task.synced) task.recommendations.push_back({now_s, current});
    task.synced = true;
    int desired = 0;
    if (current > target.max_replicas) {
      desired = target.max_replicas;
    } else if (current < target.min_replicas) {
      // Unlike the HPA, which leaves a Deployment scaled to 0 alone ("scaling is disabled"):
      // here every answer lies within the task's bounds.
      desired = target.min_replicas;
    } else {
      const std::optional<int> proposal = Proposal(now_s, task, target, current);
      if (!proposal) return current;  // the metric failed: this sync changes nothing
      const int stable = Stabilize(task, now_s, target.scale_down_window_s, current, *proposal);
      desired = LimitRate(task, now_s, target, current, stable);
    }
    if (desired != current) StoreScaleEvent(task, now_s, current, desired);
    return desired;
  }

 protected:
  // The metric's replica proposal (replica_calculator.go), or nullopt where the HPA gets no
  // usable metric.
  virtual std::optional<int> Proposal(double now_s, HpaTask& task, const TaskTarget& target,
                                      int current) = 0;

 private:
  HpaTask& Task(const std::string& name) { return tasks_.try_emplace(name, keep_s_).first->second; }

  Targets targets_;
  double keep_s_;
  std::map<std::string, HpaTask> tasks_;
};

// ---- MakeHpa: a Resource metric (CPU) with an AverageUtilization target.

// metrics-server reports a pod's CPU as the rate between its last two scrapes; the upstream
// manifests scrape every 15 s (--metric-resolution=15s), so the HPA reads the last 15 s. The
// port reads them as of the decision: the up to 15 s a real read lags is left out.
constexpr double kMetricsWindowS = 15;

// The shared rule (optimizer::HpaUtilizationReplicas) on the window's mean busy share of the
// Ready pods. Left out: missing pods (a Ready pod always has its metric here) and the CPU
// initialization period's per-pod readiness timing (samples carry counts, not pods).
std::optional<int> UtilizationProposal(const History& history, double now_s, double utilization,
                                       int current) {
  const std::optional<TaskSample> latest = history.Latest();
  const Totals window = history.Sum(now_s, kMetricsWindowS);
  if (!latest || window.ready <= 0) return std::nullopt;  // "no metrics for any ready pods"
  return optimizer::HpaUtilizationReplicas(window.busy / window.ready, latest->ready, current,
                                           utilization);
}

class Hpa final : public HpaController {
 public:
  explicit Hpa(std::map<std::string, TaskTarget> targets)
      : HpaController(std::move(targets), kMetricsWindowS) {}

 protected:
  std::optional<int> Proposal(double now_s, HpaTask& task, const TaskTarget& target,
                              int current) override {
    return UtilizationProposal(task.history, now_s, target.utilization, current);
  }
};

// ---- MakeKeda: the Prometheus scaler as an External AverageValue metric of that HPA.

// GetExternalPerPodMetricReplicas (replica_calculator.go) on the scaler's value: the ratio is
// taken against the Deployment's pods (scale.Status.Replicas; `current` here, pods being created
// with the Deployment), Ready or not. The value and the threshold are milli-quantities,
// truncated (GenerateMetricInMili and GetMetricTargetMili in keda pkg/scalers/scaler.go).
int AverageValueProposal(double rate, double threshold, int status_replicas) {
  const auto value_milli = static_cast<int64_t>(rate * 1000);
  const int64_t target_milli = std::max<int64_t>(1, static_cast<int64_t>(threshold * 1000));
  const double ratio =
      static_cast<double>(value_milli) / (static_cast<double>(target_milli) * status_replicas);
  if (std::abs(1.0 - ratio) <= kHpaTolerance) return status_replicas;
  return static_cast<int>(
      std::ceil(static_cast<double>(value_milli) / static_cast<double>(target_milli)));
}

class Keda final : public HpaController {
 public:
  Keda(std::map<std::string, TaskTarget> targets, KedaOptions options)
      : HpaController(std::move(targets), options.rate_window_s), options_(options) {}

 protected:
  std::optional<int> Proposal(double now_s, HpaTask& task, const TaskTarget& target,
                              int current) override {
    return AverageValueProposal(Rate(now_s, task), target.rps, current);
  }

 private:
  // The query sum(rate(requests[window])), read fresh at each HPA sync (KEDA's metrics server
  // asks the scaler on every HPA request) or, with useCachedMetrics, as last polled. An empty
  // result reads 0 (ExecutePromQuery with ignoreNullValues, default true). Prometheus'
  // extrapolation at the range's edges and its scrape delay are left out.
  double Rate(double now_s, HpaTask& task) const {
    const Totals window = task.history.Sum(now_s, options_.rate_window_s);
    const double fresh = Mean(window.arrivals, window.samples);
    if (!options_.use_cached_metrics) return fresh;
    if (!task.cached_rate || now_s - task.polled_at_s >= options_.polling_interval_s) {
      task.cached_rate = fresh;
      task.polled_at_s = now_s;
    }
    return *task.cached_rate;
  }

  KedaOptions options_;
};

// ---- MakeKpa: Knative's concurrency autoscaler.

// multiscaler.go tickInterval; config.go defaultConfig: stable-window, panic-window-percentage,
// panic-threshold-percentage, max-scale-up-rate, max-scale-down-rate
// (container-concurrency-target-percentage is the target's utilization); autoscaling.TargetMin, the
// lowest target a decider takes.
constexpr double kKpaTickS = 2;
constexpr double kStableWindowS = 60;
constexpr double kPanicWindowS = kStableWindowS * 10 / 100;
constexpr double kPanicThreshold = 200 / 100.0;
constexpr double kMaxScaleUpRate = 1000;
constexpr double kMaxScaleDownRate = 2;
constexpr double kTargetMin = 0.01;

struct KpaTask {
  History history{kStableWindowS};
  bool created = false;
  std::optional<double> panic_at_s;  // autoscaler.panicTime: the last tick over the threshold
  int max_panic_pods = 0;
};

// The stable and panic values: collector.go records each second's concurrency into 1 s buckets
// (BucketSize) and averages them with TimedFloat64Buckets.WindowAverage, the default "linear"
// aggregation for both windows (the weighted-exponential one is opt-in by annotation). Before
// the window fills, WindowAverage divides by the buckets written so far, as Mean does here; a
// second without a write counts as 0 there, which a gym observing every second never meets.
double WindowAverage(const History& history, double now_s, double window_s) {
  const Totals totals = history.Sum(now_s, window_s);
  return Mean(totals.concurrency, totals.samples);
}

// Scale (autoscaler.go): pods are proposed from each window, then kept within
// [floor(Ready / max-scale-down-rate), ceil(max-scale-up-rate x Ready)] (the revision is taken
// as reachable, so scale-down is bounded too); Ready counts as at least 1.
int BoundedPods(double observed, double target_value, double ready) {
  const double pods = std::ceil(observed / target_value);
  const double max_up = std::ceil(kMaxScaleUpRate * ready);
  const double max_down = std::floor(ready / kMaxScaleDownRate);
  return static_cast<int>(std::min(std::max(pods, max_down), max_up));
}

// Scale's panic state: panicTime moves to every tick over the threshold, and is cleared at the
// first tick under it more than a stable window later.
void UpdatePanic(KpaTask& task, double now_s, bool over_threshold) {
  if (over_threshold) {
    task.panic_at_s = now_s;
  } else if (task.panic_at_s && *task.panic_at_s + kStableWindowS < now_s) {
    task.panic_at_s.reset();
    task.max_panic_pods = 0;
  }
}

class Kpa final : public Autoscaler {
 public:
  explicit Kpa(std::map<std::string, TaskTarget> targets) : targets_(std::move(targets)) {}

  double PeriodSeconds() const override { return kKpaTickS; }

  void Observe(double now_s, const std::string& task, const TaskSample& sample) override {
    tasks_[task].history.Add(now_s, sample);
  }

  int Desired(double now_s, const std::string& name, int current) override {
    KpaTask& task = tasks_[name];
    const TaskTarget& target = targets_.Of(name);
    if (!task.created) Create(task, now_s);
    if (task.history.Sum(now_s, kStableWindowS).samples == 0) {
      return Clamp(current, target);  // ErrNoData: Scale returns an invalid result, no change
    }
    return Clamp(Scale(task, now_s, target), target);  // the PodAutoscaler's min/max bounds
  }

 private:
  // newAutoscaler: with more than one pod Ready it starts in panic, holding them, since it has
  // no history to scale down on; the port creates it at the task's first decision.
  static void Create(KpaTask& task, double now_s) {
    const std::optional<TaskSample> latest = task.history.Latest();
    const int ready = latest ? latest->ready : 0;
    if (ready > 1) task.panic_at_s = now_s;
    task.max_panic_pods = ready;
    task.created = true;
  }

  // Scale (autoscaler.go). The target is the decider's: concurrency x target utilization
  // (MakeDecider in pkg/reconciler/autoscaling/kpa/resources). In panic the answer is the larger
  // of the two windows' counts, and never below what panic already asked for.
  static int Scale(KpaTask& task, double now_s, const TaskTarget& target) {
    const std::optional<TaskSample> latest = task.history.Latest();
    const double ready = std::max(1, latest ? latest->ready : 0);
    const double target_value = std::max(kTargetMin, target.concurrency * target.utilization);
    const double stable = WindowAverage(task.history, now_s, kStableWindowS);
    const double panic = WindowAverage(task.history, now_s, kPanicWindowS);
    const int stable_pods = BoundedPods(stable, target_value, ready);
    const int panic_pods = BoundedPods(panic, target_value, ready);
    UpdatePanic(task, now_s, std::ceil(panic / target_value) / ready >= kPanicThreshold);
    if (!task.panic_at_s) return stable_pods;
    task.max_panic_pods = std::max({task.max_panic_pods, stable_pods, panic_pods});
    return task.max_panic_pods;
  }

  Targets targets_;
  std::map<std::string, KpaTask> tasks_;
};

}  // namespace

std::unique_ptr<Autoscaler> MakeHpa(std::map<std::string, TaskTarget> targets) {
  return std::make_unique<Hpa>(std::move(targets));
}

std::unique_ptr<Autoscaler> MakeKeda(std::map<std::string, TaskTarget> targets,
                                     KedaOptions options) {
  return std::make_unique<Keda>(std::move(targets), options);
}

std::unique_ptr<Autoscaler> MakeKpa(std::map<std::string, TaskTarget> targets) {
  return std::make_unique<Kpa>(std::move(targets));
}

}  // namespace pipescale::gym
