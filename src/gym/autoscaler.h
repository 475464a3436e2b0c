// What users run today, ported as policies the gym can run beside pipescale's optimizers: each
// scales one task's Deployment on that task's own metric, as the HorizontalPodAutoscaler, KEDA
// and Knative's KPA do. Pure: the gym feeds each a sample per task every second and asks it for
// replicas at its own sync period. The .cc names, rule by rule, the source each port follows
// and what it leaves out.
#pragma once

#include <map>
#include <memory>
#include <string>

namespace pipescale::gym {

// One task over the last second, as the systems being ported would read it.
struct TaskSample {
  int ready = 0;            // Ready pods
  double busy = 0;          // pod-seconds spent serving in the second, summed over Ready pods
                            // (CPU utilisation's stand-in: busy / ready is the mean utilisation)
  double concurrency = 0;   // requests held at the task's pods (queued or served), time-averaged
  double arrivals_rps = 0;  // requests that reached the task
};

// Per task: what one replica is taken to carry at the target, and its bounds. Every answer lies
// in [min_replicas, max_replicas]; min_replicas is taken as at least 1 (none of the ports scales
// to zero here) and max_replicas as at least min_replicas. A task missing from the map a policy
// was made with gets these defaults.
struct TaskTarget {
  // HPA: mean busy share per Ready pod; KPA: container-concurrency-target-percentage.
  double utilization = 0.7;
  double rps = 1;          // KEDA: requests per second per replica (the scaler's threshold)
  double concurrency = 1;  // KPA: requests held per pod (its target, before utilisation)
  int min_replicas = 1;
  int max_replicas = 100;
  // HPA and KEDA's HPA: behavior.scaleDown.stabilizationWindowSeconds.
  double scale_down_window_s = 300;
};

class Autoscaler {
 public:
  virtual ~Autoscaler() = default;
  // Seconds between the policy's decisions (HPA's sync period, KEDA's HPA's sync period, KPA's
  // tick).
  virtual double PeriodSeconds() const = 0;
  // The last second of `task`, ending at `now_s`.
  virtual void Observe(double now_s, const std::string& task, const TaskSample& sample) = 0;
  // The replicas `task` should have, `current` being its Deployment's now. The gym sets them.
  virtual int Desired(double now_s, const std::string& task, int current) = 0;
};

// The Kubernetes HPA (pkg/controller/podautoscaler, v1.30) on a Resource metric with an
// AverageUtilization target: sync every 15 s. Utilisation is sum(busy) / sum(ready) over the
// last 15 s (metrics-server's usual --metric-resolution, so the rate between its last two
// scrapes), truncated to whole percent as the HPA does; ratio = utilisation / target. Within
// the 0.1 tolerance the replicas stay; else desired = ceil(ratio x Ready pods). While some of
// the Deployment's pods are not Ready, a scale-up counts them at 0% and is dropped if that
// brings the ratio within tolerance or below 1. The default behaviour then applies: scale-down
// to no less than the highest recommendation of the last 300 s (the first sync records the
// current replicas as one), scale-up to at most max(2x, +4 pods) of the replicas 15 s ago.
std::unique_ptr<Autoscaler> MakeHpa(std::map<std::string, TaskTarget> targets);

struct KedaOptions {
  // The range of the PromQL rate() the scaler queries (KEDA's documented Prometheus example
  // uses [2m]); the rate is the mean arrivals over the samples in it.
  double rate_window_s = 120;
  // The trigger's useCachedMetrics (default false): the HPA's every read queries Prometheus.
  // With it, the value is refreshed once per ScaledObject pollingInterval.
  bool use_cached_metrics = false;
  double polling_interval_s = 30;  // ScaledObject default; read only with use_cached_metrics
};

// KEDA's Prometheus scaler (keda/pkg/scalers/prometheus_scaler.go) on the task's request rate,
// handed to the HPA it creates as an AverageValue external metric with `rps` as the threshold:
// the HPA reads it at its own 15 s sync (KEDA's 30 s pollingInterval only drives activation,
// 0 <-> 1, which min_replicas >= 1 rules out). desired = ceil(rate / rps) unless rate / (rps x
// current) is within the 0.1 tolerance, then the HPA's default behaviour as for MakeHpa.
std::unique_ptr<Autoscaler> MakeKeda(std::map<std::string, TaskTarget> targets,
                                     KedaOptions options = {});

// Knative's KPA (serving/pkg/autoscaler/scaling/autoscaler.go) on concurrency: a 2 s tick;
// stable = the mean of the per-second concurrency over the last 60 s, panic = over the last
// 6 s; target = concurrency x utilization (0.7 by default). desired = ceil(stable / target), no
// lower than floor(Ready / 2) and no higher than 1000 x Ready. Panic starts when ceil(panic /
// target) >= 2 x Ready (Ready counted as at least 1), or at a task's first decision if more than
// one pod is Ready then (Knative's autoscaler starts so, having no history to scale down on); in
// panic the answer is the largest count asked for since it started, never lower, and panic ends at
// the first tick without the condition more than 60 s after the last tick with it.
std::unique_ptr<Autoscaler> MakeKpa(std::map<std::string, TaskTarget> targets);

}  // namespace pipescale::gym
