#include "optimizer/tail.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

namespace pipescale::optimizer {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// P(Erlang(k, 1) <= x) = 1 - sum_{i<k} e^-x x^i / i!, summed in log space so that k in the
// thousands neither underflows nor overflows.
double ErlangCdf(int k, double x) {
  if (x <= 0) return 0;
  // The terms grow while i < x and shrink after: the largest is at i = min(k - 1, floor(x)).
  const int top = static_cast<int>(std::min<double>(k - 1, std::floor(x)));
  const double log_top = -x + top * std::log(x) - std::lgamma(top + 1.0);
  double sum = 1, term = 1;  // relative to the largest
  for (int i = top; i > 0 && term > 1e-17; --i) sum += term *= i / x;
  term = 1;
  for (int i = top + 1; i < k && term > 1e-17; ++i) sum += term *= x / i;
  return 1 - std::exp(log_top) * sum;
}

// E[min(1 + Poisson(mean_arrivals), batch)]: the rows of a batch that goes out when full or when
// its first request has waited long enough for `mean_arrivals` more to arrive on average.
double ExpectedBatch(int batch, double mean_arrivals) {
  double expected = 0, left = 1;
  double term = std::exp(-mean_arrivals);  // P(Poisson = i), from i = 0
  for (int i = 0; i + 1 < batch; ++i) {
    expected += (i + 1) * term;
    left -= term;
    term *= mean_arrivals / (i + 1);
  }
  return expected + batch * std::max(0.0, left);
}

// Allen-Cunneen: the p-quantile of the wait in a G/G/c queue (exponential tail behind the chance
// of waiting, Erlang C; `variation` is the arrivals' plus the service's squared coefficient of
// variation), rounded up to whole batches: joining the shortest queue is not one
// queue, a request waits at the replica it joined, for the batch in service there and whole
// batches behind it, while another may free up first.
double QueueMs(double wait_chance, double batch_rate_rps, double variation, double mean_exec_ms,
               double exec_ms, int replicas, double p) {
  if (wait_chance <= 1 - p) return 0;
  const double spare_rps = replicas * 1000 / mean_exec_ms - batch_rate_rps;
  const double mean_wait_ms = 1000 * wait_chance / spare_rps * variation / 2;
  const double ms = mean_wait_ms / wait_chance * std::log(wait_chance / (1 - p));
  return std::max(0.0, std::ceil(ms / exec_ms - 1e-9)) * exec_ms;
}

// Erlang C from Erlang B at the same number of servers.
double WaitChance(double erlang_b, int servers, double offered) {
  if (offered >= servers) return 1;
  const double rho = offered / servers;
  return erlang_b / (1 - rho + rho * erlang_b);
}

}  // namespace

namespace {

// The p-quantile of Erlang(k, 1), by bisection. Remembered per thread: a solve asks for the same
// few (k, p) for every task and batch size, at every interval, and each answer costs some hundred
// log-gamma evaluations (most of a plan's time before it was remembered).
double UnitErlangQuantile(int k, double p) {
  thread_local std::map<std::pair<int, double>, double> known;
  if (auto it = known.find({k, p}); it != known.end()) return it->second;
  double lo = 0, hi = k + 1.0;
  while (ErlangCdf(k, hi) < p) hi *= 2;
  for (int i = 0; i < 60 && hi - lo > 1e-9 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (ErlangCdf(k, mid) < p ? lo : hi) = mid;
  }
  if (known.size() > 100000) known.clear();  // a bound, far past any pipeline's batch sizes
  known.emplace(std::make_pair(k, p), hi);
  return hi;
}

}  // namespace

double ErlangQuantileMs(int k, double rate_rps, double p) {
  if (k <= 0) return 0;
  if (!(rate_rps > 0)) return kInfinity;
  return 1000 * UnitErlangQuantile(k, p) / rate_rps;
}

double ErlangC(int servers, double offered) {
  if (offered >= servers) return 1;
  if (offered <= 0) return 0;
  // Erlang B by its recurrence, which stays finite for any number of servers.
  double b = 1;
  for (int k = 1; k <= servers; ++k) b = offered * b / (k + offered * b);
  return WaitChance(b, servers, offered);
}

TailSeries::TailSeries(const TaskLoad& load, double percentile)
    // A plan for the 100th percentile would have to be infinite: the model stops at 99.99.
    : p_(std::min(percentile, 99.99) / 100),
      first_(std::max(1, load.replicas)),
      idle_(!(load.rate_rps > 0)) {
  common_.exec_ms = load.exec_ms;
  if (idle_) return;  // nothing arrives: nothing waits
  // Batches fill at the whole rate: in the router's one queue, or at the server whose batch the
  // picker fills first (routing/picker.h).
  common_.wait_budget_ms = 1000.0 * (load.batch - 1) / load.rate_rps;
  common_.fill_ms = ErlangQuantileMs(load.batch - 1, load.rate_rps, p_);
  rows_ = load.batch;
  mean_exec_ms_ = load.exec_ms;
  if (load.formation == BatchFormation::kRouter && load.batch > 1) {
    common_.fill_ms = std::min(common_.fill_ms, common_.wait_budget_ms);
    rows_ = ExpectedBatch(load.batch, load.batch - 1.0);  // its budget is the mean fill time
    mean_exec_ms_ =
        load.exec_one_ms + (rows_ - 1) * (load.exec_ms - load.exec_one_ms) / (load.batch - 1);
  }
  batch_rate_ = load.rate_rps / rows_;
  variation_ = std::max(1.0, load.arrival_dispersion) / rows_ + load.service_cv2;
  offered_ = batch_rate_ * mean_exec_ms_ / 1000;
  for (int n = 1; n < first_; ++n) erlang_b_ = offered_ * erlang_b_ / (n + offered_ * erlang_b_);
}

TailLatency TailSeries::Next() {
  const int n = first_ + steps_++;
  if (idle_) return common_;
  erlang_b_ = offered_ * erlang_b_ / (n + offered_ * erlang_b_);
  TailLatency tail = common_;
  tail.queue_ms = offered_ >= n ? kInfinity
                                : QueueMs(WaitChance(erlang_b_, n, offered_), batch_rate_,
                                          variation_, mean_exec_ms_, common_.exec_ms, n, p_);
  return tail;
}

std::vector<TailLatency> TaskTailLatencies(const TaskLoad& load, int last, double percentile) {
  TailSeries series(load, percentile);
  std::vector<TailLatency> out;
  for (int n = series.replicas(); n <= last; ++n) out.push_back(series.Next());
  return out;
}

TaskLoad LoadOf(const model::Variant& variant, const model::Profile& profile, int batch,
                double rate_rps, int replicas) {
  return {.rate_rps = rate_rps,
          .replicas = replicas,
          .batch = batch,
          .exec_ms = profile.latency.Ms(batch),
          .exec_one_ms = profile.latency.Ms(1),
          .formation = variant.RouterBatches() ? BatchFormation::kRouter : BatchFormation::kServer};
}

int FewestReplicasWithin(const TaskLoad& load, double max_queue_ms, int max_replicas,
                         double percentile) {
  const int first = std::max(1, load.replicas);
  const int last =
      std::max(first, std::min(max_replicas, load.replicas + std::max(64, load.replicas)));
  TailSeries series(load, percentile);
  int n = first;
  while (n < last && !(series.Next().queue_ms <= max_queue_ms)) ++n;
  return n;
}

double UsableShare(TaskLoad load, double max_queue_ms, double percentile) {
  const double full_rps = std::max(1, load.replicas) * 1000.0 * load.batch / load.exec_ms;
  double lo = 0, hi = 1;
  for (int i = 0; i < 30; ++i) {
    const double mid = (lo + hi) / 2;
    load.rate_rps = mid * full_rps;
    (TaskTailLatency(load, percentile).queue_ms <= max_queue_ms ? lo : hi) = mid;
  }
  return lo;
}

double ShareAtLoad(TaskLoad load, double max_queue_ms, int max_replicas, double percentile) {
  const double full_rps = 1000.0 * load.batch / load.exec_ms;
  const double fewest = std::max(1.0, std::ceil(load.rate_rps / full_rps - 1e-9));
  if (!std::isfinite(full_rps) || fewest > max_replicas) return 1;
  load.replicas = static_cast<int>(fewest);
  load.replicas = FewestReplicasWithin(load, max_queue_ms, max_replicas, percentile);
  return UsableShare(load, max_queue_ms, percentile);
}

TailLatency TaskTailLatency(const TaskLoad& load, double percentile) {
  return TaskTailLatencies(load, std::max(1, load.replicas), percentile).front();
}

}  // namespace pipescale::optimizer
