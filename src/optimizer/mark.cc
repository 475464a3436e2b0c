#include "optimizer/mark.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>

#include "common/check.h"

namespace pipescale::optimizer::mark {

std::optional<BatchTuning> TryBatch(const std::function<double(int)>& latency_ms, double rt_max_ms,
                                    double arrival_rps_per_instance, int b) {
  const double wait =
      arrival_rps_per_instance > 0 ? 1000.0 * (b - 1) / arrival_rps_per_instance : rt_max_ms;
  const double t = latency_ms(b);
  if (b > 1 && (wait + t > rt_max_ms || wait + t > b * latency_ms(1))) return std::nullopt;
  return BatchTuning{.max_batch = b, .wait_ms = b > 1 ? wait : 0, .rate_rps = 1000.0 * b / t};
}

namespace {

// Grows b from 1 while batch b at arrival_of(b) meets MArk's rules.
BatchTuning Grow(const std::function<double(int)>& latency_ms, double rt_max_ms, int limit,
                 const std::function<double(int)>& arrival_of) {
  BatchTuning out{.max_batch = 1, .wait_ms = 0, .rate_rps = 1000 / latency_ms(1)};
  for (int b = 2; b <= limit; ++b) {
    const std::optional<BatchTuning> next = TryBatch(latency_ms, rt_max_ms, arrival_of(b), b);
    if (!next) break;
    out = *next;
  }
  return out;
}

}  // namespace

BatchTuning TuneBatch(const std::function<double(int)>& latency_ms, double rt_max_ms,
                      double arrival_rps_per_instance, int limit) {
  return Grow(latency_ms, rt_max_ms, limit, [&](int) { return arrival_rps_per_instance; });
}

BatchTuning TuneBatchAtFullLoad(const std::function<double(int)>& latency_ms, double rt_max_ms,
                                int limit) {
  return Grow(latency_ms, rt_max_ms, limit, [&](int b) { return 1000.0 * b / latency_ms(b); });
}

namespace {

std::vector<double> Flat(double value, int steps) {
  return std::vector<double>(steps, std::max(0.0, value));
}

class PeakHoldForecaster : public Forecaster {
 public:
  explicit PeakHoldForecaster(double headroom) : headroom_(headroom) {}
  std::string Name() const override { return "peak-hold"; }
  std::vector<double> Forecast(const std::vector<double>& history, int steps) const override {
    const double peak = history.empty() ? 0 : *std::max_element(history.begin(), history.end());
    return Flat(peak * headroom_, steps);
  }

 private:
  double headroom_;
};

class EwmaForecaster : public Forecaster {
 public:
  explicit EwmaForecaster(double alpha) : alpha_(alpha) {}
  std::string Name() const override { return "ewma"; }
  std::vector<double> Forecast(const std::vector<double>& history, int steps) const override {
    if (history.empty()) return Flat(0, steps);
    double s = history.front();
    for (double x : history) s = alpha_ * x + (1 - alpha_) * s;
    return Flat(s, steps);
  }

 private:
  double alpha_;
};

class LinearTrendForecaster : public Forecaster {
 public:
  explicit LinearTrendForecaster(int window) : window_(window) {}
  std::string Name() const override { return "linear-trend"; }
  std::vector<double> Forecast(const std::vector<double>& history, int steps) const override {
    const int n = std::min<int>(window_, static_cast<int>(history.size()));
    if (n < std::max(3, window_ / 3)) return Flat(history.empty() ? 0 : history.back(), steps);
    const size_t first = history.size() - n;
    double st = 0, sy = 0, stt = 0, sty = 0;
    for (int t = 0; t < n; ++t) {
      st += t;
      sy += history[first + t];
      stt += static_cast<double>(t) * t;
      sty += t * history[first + t];
    }
    const double slope = (n * sty - st * sy) / (n * stt - st * st);
    const double intercept = (sy - slope * st) / n;
    std::vector<double> out;
    out.reserve(static_cast<size_t>(std::max(steps, 0)));
    for (int h = 0; h < steps; ++h) out.push_back(std::max(0.0, intercept + slope * (n + h)));
    return out;
  }

 private:
  int window_;
};

class HoltWintersForecaster : public Forecaster {
 public:
  HoltWintersForecaster(int period, double alpha, double beta, double gamma)
      : period_(period), alpha_(alpha), beta_(beta), gamma_(gamma) {
    PIPESCALE_CHECK(period >= 2);
  }
  std::string Name() const override { return "holt-winters"; }
  std::vector<double> Forecast(const std::vector<double>& history, int steps) const override {
    const int p = period_;
    if (static_cast<int>(history.size()) < 2 * p)
      return EwmaForecaster(alpha_).Forecast(history, steps);
    // Initial level, trend and season from the first two seasons.
    const auto second_season = history.begin() + p;
    const double first = std::accumulate(history.begin(), second_season, 0.0) / p;
    const double second = std::accumulate(second_season, second_season + p, 0.0) / p;
    double level = first, trend = (second - first) / p;
    std::vector<double> season(p);
    for (int i = 0; i < p; ++i) season[i] = history[i] - first;
    for (size_t t = p; t < history.size(); ++t) {
      const double s = season[t % p];
      const double previous = level;
      level = alpha_ * (history[t] - s) + (1 - alpha_) * (level + trend);
      trend = beta_ * (level - previous) + (1 - beta_) * trend;
      season[t % p] = gamma_ * (history[t] - level) + (1 - gamma_) * s;
    }
    std::vector<double> out;
    for (int h = 1; h <= steps; ++h) {
      out.push_back(std::max(0.0, level + h * trend + season[(history.size() + h - 1) % p]));
    }
    return out;
  }

 private:
  int period_;
  double alpha_, beta_, gamma_;
};

}  // namespace

std::unique_ptr<Forecaster> PeakHold(double headroom) {
  return std::make_unique<PeakHoldForecaster>(headroom);
}
std::unique_ptr<Forecaster> Ewma(double alpha) { return std::make_unique<EwmaForecaster>(alpha); }
std::unique_ptr<Forecaster> LinearTrend(int window) {
  return std::make_unique<LinearTrendForecaster>(window);
}
std::unique_ptr<Forecaster> HoltWinters(int period, double alpha, double beta, double gamma) {
  return std::make_unique<HoltWintersForecaster>(period, alpha, beta, gamma);
}

Backtest RunBacktest(const Forecaster& forecaster, const std::vector<double>& series, int warmup,
                     int horizon) {
  Backtest out{.forecaster = forecaster.Name()};
  int scored = 0, under = 0, over_count = 0;
  double ape = 0, over = 0;
  for (size_t t = warmup; t + horizon <= series.size(); ++t) {
    const std::vector<double> history(series.begin(),
                                      series.begin() + static_cast<std::ptrdiff_t>(t));
    const double predicted = forecaster.Forecast(history, horizon)[horizon - 1];
    const double actual = series[t + horizon - 1];
    if (actual <= 0) continue;
    ++scored;
    ape += std::abs(predicted - actual) / actual;
    if (predicted < actual) {
      ++under;
    } else {
      ++over_count;
      over += (predicted - actual) / actual;
    }
  }
  if (scored > 0) {
    out.mape = ape / scored;
    out.under_provisioned = static_cast<double>(under) / scored;
  }
  if (over_count > 0) out.over_provision = over / over_count;
  return out;
}

namespace {

// The rise a forecast made at `origin` proposed over steps [lead, steps), and how much of it the
// series then reached (of the steps that have come).
struct Proposal {
  double rise = 0;
  double came = 0;
};

Proposal ProposalAt(const Forecaster& forecaster, const std::vector<double>& series, size_t origin,
                    int lead, int steps) {
  const double now = series[origin];
  const std::vector<double> history(series.begin(),
                                    series.begin() + static_cast<std::ptrdiff_t>(origin) + 1);
  const std::vector<double> ahead = forecaster.Forecast(history, steps - 1);
  double proposed = now;
  double actual = 0;
  for (int h = std::max(lead, 1); h < steps && static_cast<size_t>(h) <= ahead.size(); ++h) {
    if (std::isfinite(ahead[h - 1])) proposed = std::max(proposed, ahead[h - 1]);
    actual = std::max(actual, series[origin + h]);
  }
  const double rise = proposed - now;
  return {.rise = rise, .came = std::clamp(actual - now, 0.0, rise)};
}

}  // namespace

double ForecastTrust(const Forecaster& forecaster, const std::vector<double>& series, int lead,
                     int steps, int window) {
  const size_t ahead = static_cast<size_t>(std::max({lead, 1, steps - 1}));
  if (series.size() <= ahead || window <= 0) return 0;
  // The newest origin whose every step has come: scoring one whose later steps are still to
  // come would count a rise still under way as one that did not come.
  const size_t last = series.size() - 1 - ahead;
  const size_t first = last + 1 > static_cast<size_t>(window) ? last + 1 - window : 0;
  int rises = 0;
  double proposed = 0;
  double came = 0;
  for (size_t origin = first; origin <= last; ++origin) {
    if (!std::isfinite(series[origin])) continue;
    const Proposal p = ProposalAt(forecaster, series, origin, lead, steps);
    if (!(p.rise > 0) || !std::isfinite(p.rise)) continue;
    ++rises;
    proposed += p.rise;
    came += p.came;
  }
  if (rises < kMinTrustedForecasts || !(proposed > 0) || !std::isfinite(proposed)) return 0;
  return std::clamp(came / proposed, 0.0, 1.0);
}

namespace {

// Algorithm 1's greedy state: instances kept from those running and launched, per class.
struct Fleet {
  std::vector<int> kept;
  std::vector<int> launched;

  double Capacity(const std::vector<InstanceClass>& classes) const {
    double capacity = 0;
    for (size_t i = 0; i < classes.size(); ++i) {
      capacity += (kept[i] + launched[i]) * classes[i].capacity_rps;
    }
    return capacity;
  }
};

struct Pick {
  int cls = -1;
  bool running = false;
};

// The cheapest per request it would absorb over the short run [first, end]; running instances
// first, so that they win ties.
Pick Cheapest(const std::vector<double>& unmet, int first, int end,
              const std::vector<InstanceClass>& classes, const std::vector<int>& running,
              const Fleet& fleet) {
  double best_cost = std::numeric_limits<double>::infinity();
  Pick best;
  for (bool from_running : {true, false}) {
    for (size_t i = 0; i < classes.size(); ++i) {
      if (from_running && fleet.kept[i] >= running[i]) continue;
      if (fleet.kept[i] + fleet.launched[i] >= classes[i].max_instances) continue;
      double absorbed = 0;
      for (int t = first; t <= end; ++t) absorbed += std::min(classes[i].capacity_rps, unmet[t]);
      if (absorbed <= 0) continue;
      const double overhead = from_running ? 0 : classes[i].launch_overhead;
      const double cost = (overhead + (end - first + 1) * classes[i].price_per_step) / absorbed;
      if (cost < best_cost * (1 - 1e-12)) {
        best_cost = cost;
        best = {static_cast<int>(i), from_running};
      }
    }
  }
  return best;
}

// How many more times the greedy would take `pick` right after taking it now, counting only
// picks it can prove: while every step of [first, end] stays short by more than any class's
// capacity, every candidate absorbs exactly what it does now, so the same class wins again.
// Three instances are left to the step-by-step loop as a margin for rounding.
int Repeats(const std::vector<double>& unmet, int first, int end,
            const std::vector<InstanceClass>& classes, const std::vector<int>& running,
            const Fleet& fleet, Pick pick) {
  double least = std::numeric_limits<double>::infinity();
  for (int t = first; t <= end; ++t) least = std::min(least, unmet[t]);
  double largest = 0;
  for (const InstanceClass& c : classes) largest = std::max(largest, c.capacity_rps);
  const InstanceClass& c = classes[pick.cls];
  double repeats = std::floor((least - largest) / c.capacity_rps) - 3;
  const int count = fleet.kept[pick.cls] + fleet.launched[pick.cls] + 1;  // after this pick
  repeats = std::min(repeats, static_cast<double>(c.max_instances) - count - 1);
  if (pick.running) {
    repeats =
        std::min(repeats, static_cast<double>(running[pick.cls]) - (fleet.kept[pick.cls] + 1) - 1);
  }
  return repeats >= 1 ? static_cast<int>(repeats) : 0;
}

}  // namespace

std::vector<int> Provision(const std::vector<double>& forecast,
                           const std::vector<InstanceClass>& classes,
                           const std::vector<int>& running, int lead, bool* exhausted) {
  PIPESCALE_CHECK(running.size() == classes.size());
  const int steps = static_cast<int>(forecast.size());
  Fleet fleet{std::vector<int>(classes.size(), 0), std::vector<int>(classes.size(), 0)};
  if (exhausted != nullptr) *exhausted = false;
  if (lead >= steps) return fleet.kept;
  std::vector<double> unmet(forecast.size());
  std::int64_t work = 0;
  while (true) {
    const double capacity = fleet.Capacity(classes);
    for (int t = 0; t < steps; ++t) unmet[t] = forecast[t] - capacity;
    // The first step still short, and the run of short steps from it.
    int first = lead;
    while (first < steps && unmet[first] <= 1e-9) ++first;
    if (first == steps) break;
    int end = first;
    while (end + 1 < steps && unmet[end + 1] > 1e-9) ++end;
    work += steps + 2 * static_cast<std::int64_t>(classes.size()) * (end - first + 1);
    if (work > kMaxProvisionWork) {
      if (exhausted != nullptr) *exhausted = true;
      break;
    }
    const Pick pick = Cheapest(unmet, first, end, classes, running, fleet);
    if (pick.cls < 0) break;  // no class has capacity
    const int repeats = Repeats(unmet, first, end, classes, running, fleet, pick);
    (pick.running ? fleet.kept : fleet.launched)[pick.cls] += 1 + repeats;
  }
  std::vector<int> out(classes.size());
  for (size_t i = 0; i < classes.size(); ++i) out[i] = fleet.kept[i] + fleet.launched[i];
  return out;
}

std::vector<int> WithCooldown(const std::vector<std::vector<int>>& recent_plans, int cooldown) {
  PIPESCALE_CHECK(!recent_plans.empty());
  std::vector<int> out = recent_plans.back();
  const size_t from =
      recent_plans.size() > static_cast<size_t>(cooldown) ? recent_plans.size() - cooldown : 0;
  for (size_t k = from; k < recent_plans.size(); ++k) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = std::max(out[i], recent_plans[k][i]);
  }
  return out;
}

bool Spill(const std::vector<double>& busy_ms, const std::vector<double>& service_ms,
           double waited_ms, double rt_max_ms) {
  PIPESCALE_CHECK(busy_ms.size() == service_ms.size());
  for (size_t i = 0; i < busy_ms.size(); ++i) {
    if (waited_ms + busy_ms[i] + service_ms[i] <= rt_max_ms) return false;
  }
  return true;
}

void SloGuard::Observe(bool met) {
  if (recent_.size() < static_cast<size_t>(window_)) {
    recent_.push_back(met);
    return;
  }
  recent_[next_] = met;
  next_ = (next_ + 1) % window_;
}

double SloGuard::Attainment() const {
  if (recent_.empty()) return 1;
  return static_cast<double>(std::count(recent_.begin(), recent_.end(), true)) / recent_.size();
}

int SloGuard::Check() {
  if (quiet_ > 0) {
    --quiet_;
    return 0;
  }
  if (recent_.size() < static_cast<size_t>(window_) || Attainment() >= slo_min_) return 0;
  quiet_ = cooldown_;
  return step_;
}

}  // namespace pipescale::optimizer::mark
