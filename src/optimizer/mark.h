// MArk (IEEE TCC): SLO-aware batching per hardware class, forecasts of the peak request rate,
// greedy cost-effective provisioning that counts launch overhead, and a reactive SLO guard.
// Pure: time is a step index, state is passed in and out.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pipescale::optimizer::mark {

// --- Batching (Sec. 4.3) --------------------------------------------------------------------

struct BatchTuning {
  int max_batch = 1;    // N_batch
  double wait_ms = 0;   // W_batch: the longest a request waits for its batch to fill
  double rate_rps = 0;  // what one instance then serves
};

// Batch b, if it meets both of MArk's rules: W(b) + T(b) <= RT_max and W(b) + T(b) <= b * T(1)
// (batching still beats serving the b one by one), with W(b) = (b - 1) / arrival rate per
// instance, the time to collect b requests (RT_max when nothing arrives). `latency_ms(b)` is
// T(b).
std::optional<BatchTuning> TryBatch(const std::function<double(int)>& latency_ms, double rt_max_ms,
                                    double arrival_rps_per_instance, int b);

// Grows b from 1 while TryBatch holds; `limit` caps b.
BatchTuning TuneBatch(const std::function<double(int)>& latency_ms, double rt_max_ms,
                      double arrival_rps_per_instance, int limit);

// The same at full load: each b at the arrival rate a busy instance sees, its own rate at b,
// so W(b) = (b - 1) T(b) / b. What one instance can serve within RT_max.
BatchTuning TuneBatchAtFullLoad(const std::function<double(int)>& latency_ms, double rt_max_ms,
                                int limit);

// --- Forecasting (Sec. 4.2) -----------------------------------------------------------------

// Forecasts the next `steps` values of a series of per-step peak rates.
class Forecaster {
 public:
  virtual ~Forecaster() = default;
  virtual std::string Name() const = 0;
  virtual std::vector<double> Forecast(const std::vector<double>& history, int steps) const = 0;
};

// The all-time peak times a headroom: what the MArk prototype actually runs.
std::unique_ptr<Forecaster> PeakHold(double headroom = 1.2);
// Exponentially weighted mean, flat ahead.
std::unique_ptr<Forecaster> Ewma(double alpha = 0.3);
// Least-squares line over the last `window` steps, extended; flat at the last value until a
// third of the window is in (two points make a slope, not a trend).
std::unique_ptr<Forecaster> LinearTrend(int window = 30);
// Additive Holt-Winters with a season of `period` steps.
std::unique_ptr<Forecaster> HoltWinters(int period, double alpha = 0.3, double beta = 0.05,
                                        double gamma = 0.3);

struct Backtest {
  std::string forecaster;
  double mape = 0;               // mean absolute percentage error of the forecasts
  double under_provisioned = 0;  // share of steps where the forecast fell below the actual
  double over_provision = 0;     // mean (forecast - actual) / actual where above
};

// Rolling-origin backtest: from `warmup` on, forecast `horizon` steps ahead at every step and
// score the forecast for that step against what came.
Backtest RunBacktest(const Forecaster& forecaster, const std::vector<double>& series, int warmup,
                     int horizon);

// How much of a forecast's rise to provision for, from how its earlier forecasts fared (issue 46:
// a forecast bounded by its measured error never costs much more than reacting). A rolling
// backtest over the last `window` origins of `series` whose steps have all come, each forecast
// made from the series up to its origin: of the rise above the origin's rate each one proposed for
// steps `lead` .. `steps - 1`, the share the rates then reached. 0 (react) until
// kMinTrustedForecasts of them proposed a rise: a forecast is trusted once it has been right.
inline constexpr int kMinTrustedForecasts = 5;
double ForecastTrust(const Forecaster& forecaster, const std::vector<double>& series, int lead,
                     int steps, int window);

// --- Provisioning (Algorithm 1) -------------------------------------------------------------

struct InstanceClass {
  std::string name;
  double capacity_rps = 0;     // one instance's rate within the SLO, batching tuned
  double price_per_step = 0;   // $ per planning step
  double launch_overhead = 0;  // $ paid while a new instance boots (startup x price)
  int max_instances = std::numeric_limits<int>::max();
};

// How many instances of each class to run so that every step from `lead` to the end of the
// forecast is covered, choosing greedily the class with the lowest cost per request it would
// absorb; running instances are candidates with no launch overhead and are kept on ties. A
// class at its max_instances is no candidate; when every class is, the forecast stays unmet.
// `forecast[t]` is the peak rate at step t (t = 0 is now). Runs of picks that cannot change
// the next choice are taken at once; the rest stop after kMaxProvisionWork (step, class) terms
// (then `*exhausted` is set and the forecast may stay unmet), so a huge forecast over classes
// of very different capacities cannot take the process's time.
inline constexpr std::int64_t kMaxProvisionWork = 50'000'000;
std::vector<int> Provision(const std::vector<double>& forecast,
                           const std::vector<InstanceClass>& classes,
                           const std::vector<int>& running, int lead, bool* exhausted = nullptr);

// Scale-in only after a cool-down: per class, the most any of the last `cooldown` plans
// (oldest first, this one last) asked for.
std::vector<int> WithCooldown(const std::vector<std::vector<int>>& recent_plans, int cooldown);

// --- Spill to the burst pool (Sec. 4.5) ----------------------------------------------------

// The bouncer: a request goes to the warm burst pool when it would finish past RT_max on every
// main instance, each predicted as its remaining busy time plus the request's service time
// there, after the time the request already waited.
bool Spill(const std::vector<double>& busy_ms, const std::vector<double>& service_ms,
           double waited_ms, double rt_max_ms);

// --- Reactive SLO tracking (Sec. 4.4) -------------------------------------------------------

// Watches the last `window` requests; when more than 1 - slo_min of them missed RT_max, asks
// for `step` more instances at once, then stays quiet for `cooldown` checks.
class SloGuard {
 public:
  SloGuard(int window, double slo_min, int step, int cooldown)
      : window_(window), slo_min_(slo_min), step_(step), cooldown_(cooldown) {}

  void Observe(bool met);
  // Called once per planning step: the instances to add now.
  int Check();
  double Attainment() const;

 private:
  int window_;
  double slo_min_;
  int step_;
  int cooldown_;
  std::vector<bool> recent_;  // ring of the last `window_` outcomes
  size_t next_ = 0;
  int quiet_ = 0;
};

}  // namespace pipescale::optimizer::mark
