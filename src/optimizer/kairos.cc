#include "optimizer/kairos.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/check.h"

namespace pipescale::optimizer::kairos {

int LatencyPredictor::BucketOf(int batch) const {
  return (batch + bucket_ - 1) / bucket_ * bucket_;  // round up, as Kairos buckets batches
}

void LatencyPredictor::Add(int batch, double ms) {
  Bucket& b = buckets_[BucketOf(batch)];
  ++b.count;
  b.sum += ms;
  b.max = b.count == 1 ? ms : std::max(b.max, ms);
  n_ += 1;
  sx_ += batch;
  sy_ += ms;
  sxx_ += static_cast<double>(batch) * batch;
  sxy_ += batch * ms;
  syy_ += ms * ms;
}

bool LatencyPredictor::FromTable(int batch) const {
  auto it = buckets_.find(BucketOf(batch));
  return it != buckets_.end() && it->second.count >= table_after_;
}

double LatencyPredictor::PredictMs(int batch) const {
  if (auto it = buckets_.find(BucketOf(batch)); it != buckets_.end() && FromTable(batch)) {
    return (it->second.sum - it->second.max) / (it->second.count - 1);
  }
  if (n_ == 0) return 0;
  const double denominator = n_ * sxx_ - sx_ * sx_;
  if (denominator == 0) return sy_ / n_;  // one batch size seen so far: its mean
  const double slope = (n_ * sxy_ - sx_ * sy_) / denominator;
  return (sy_ - slope * sx_) / n_ + slope * batch;
}

double LatencyPredictor::Correlation() const {
  const double cov = n_ * sxy_ - sx_ * sy_;
  const double vx = n_ * sxx_ - sx_ * sx_, vy = n_ * syy_ - sy_ * sy_;
  return vx > 0 && vy > 0 ? cov / std::sqrt(vx * vy) : 0;
}

double HeterogeneityCoefficient(double base_largest_ms, double class_largest_ms) {
  PIPESCALE_CHECK(class_largest_ms > 0);
  return base_largest_ms / class_largest_ms;
}

std::vector<int> MinCostAssignment(const std::vector<std::vector<double>>& cost) {
  const int rows = static_cast<int>(cost.size());
  if (rows == 0) return {};
  const int cols = static_cast<int>(cost[0].size());
  if (rows > cols) {  // solve the transpose: every column gets a row
    std::vector<std::vector<double>> t(cols, std::vector<double>(rows));
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < cols; ++j) t[j][i] = cost[i][j];
    }
    const std::vector<int> by_col = MinCostAssignment(t);
    std::vector<int> out(rows, -1);
    for (int j = 0; j < cols; ++j) {
      if (by_col[j] >= 0) out[by_col[j]] = j;
    }
    return out;
  }
  // Shortest augmenting paths with row and column potentials (1-based, column 0 a sentinel).
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> u(rows + 1, 0), v(cols + 1, 0);
  std::vector<int> match(cols + 1, 0), way(cols + 1, 0);
  for (int i = 1; i <= rows; ++i) {
    match[0] = i;
    int j0 = 0;
    std::vector<double> minv(cols + 1, kInf);
    std::vector<char> used(cols + 1, false);
    do {
      used[j0] = true;
      const int i0 = match[j0];
      double delta = kInf;
      int j1 = 0;
      for (int j = 1; j <= cols; ++j) {
        if (used[j]) continue;
        const double cur = cost[i0 - 1][j - 1] - u[i0] - v[j];
        if (cur < minv[j]) {
          minv[j] = cur;
          way[j] = j0;
        }
        if (minv[j] < delta) {
          delta = minv[j];
          j1 = j;
        }
      }
      for (int j = 0; j <= cols; ++j) {
        if (used[j]) {
          u[match[j]] += delta;
          v[j] -= delta;
        } else {
          minv[j] -= delta;
        }
      }
      j0 = j1;
    } while (match[j0] != 0);
    do {
      const int j1 = way[j0];
      match[j0] = match[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  std::vector<int> out(rows, -1);
  for (int j = 1; j <= cols; ++j) {
    if (match[j] > 0) out[match[j] - 1] = j - 1;
  }
  return out;
}

std::vector<int> Dispatch(const std::vector<Query>& queries, const std::vector<Instance>& instances,
                          const std::vector<std::function<double(int)>>& latency_ms,
                          const std::vector<double>& coefficient, double qos_ms, double xi) {
  if (queries.empty() || instances.empty()) return std::vector<int>(queries.size(), -1);
  std::vector<std::vector<double>> cost(queries.size(), std::vector<double>(instances.size()));
  for (size_t i = 0; i < queries.size(); ++i) {
    for (size_t j = 0; j < instances.size(); ++j) {
      const int c = instances[j].hardware_class;
      const double done = instances[j].busy_ms + latency_ms[c](queries[i].batch);
      const bool late_anyway = queries[i].waited_ms > xi * qos_ms;
      cost[i][j] = late_anyway || done + queries[i].waited_ms <= xi * qos_ms ? coefficient[c] * done
                                                                             : 10 * qos_ms;
    }
  }
  return MinCostAssignment(cost);
}

Profile DeriveProfile(const std::function<double(int)>& base_ms,
                      const std::vector<std::pair<std::string, std::function<double(int)>>>& aux,
                      const BatchMix& mix, double qos_ms) {
  Profile p;
  double mean_base = 0;
  for (const auto& [b, prob] : mix) mean_base += prob * base_ms(b);
  p.base_qps = 1000 / mean_base;
  // Throughput of a class on the queries below a threshold.
  auto qps_below = [&](const std::function<double(int)>& ms, int threshold) {
    double mass = 0, time = 0;
    for (const auto& [b, prob] : mix) {
      if (b >= threshold) continue;
      mass += prob;
      time += prob * ms(b);
    }
    return mass > 0 ? 1000 * mass / time : 0.0;
  };
  for (const auto& [name, ms] : aux) {
    AuxiliaryProfile a{.name = name};
    a.violating_batch = std::numeric_limits<int>::max();
    for (const auto& [b, prob] : mix) {
      if (ms(b) > qos_ms) {
        a.violating_batch = b;
        break;
      }
    }
    // f counts the queries this class serves within QoS, those below s. (The artifact counts s
    // too, one step of its dense 10-row grid; on a sparse mix such as {1, 10} that would count
    // every 10-row query as served by a class that cannot serve one.)
    double base_small = 0;
    for (const auto& [b, prob] : mix) {
      if (b >= a.violating_batch) continue;
      a.small_ratio += prob;
      base_small += prob * base_ms(b);
    }
    a.time_ratio = base_small / mean_base;
    a.qps = qps_below(ms, a.violating_batch);
    p.auxiliary.push_back(std::move(a));
  }
  // Each class at every other class's threshold, for mixes of auxiliary classes.
  for (size_t i = 0; i < aux.size(); ++i) {
    for (const auto& other : p.auxiliary) {
      p.auxiliary[i].qps_below[other.violating_batch] =
          qps_below(aux[i].second, other.violating_batch);
    }
  }
  return p;
}

const char* RegimeName(Regime regime) {
  switch (regime) {
    case Regime::kHomogeneous:
      return "homog";
    case Regime::kBaseBottleneck:
      return "base-bottleneck";
    case Regime::kAuxiliaryBottleneck:
      return "aux-bottleneck";
  }
  return "";
}

Bound UpperBound(const Profile& profile, const std::vector<int>& counts) {
  PIPESCALE_CHECK(counts.size() == profile.auxiliary.size() + 1 && counts[0] >= 1);
  const double u = counts[0];
  double f = 0, tau = 0;
  int s = 0;
  bool any = false;
  for (size_t i = 0; i < profile.auxiliary.size(); ++i) {
    if (counts[i + 1] == 0) continue;
    const AuxiliaryProfile& a = profile.auxiliary[i];
    any = true;
    f = std::max(f, a.small_ratio);
    tau = std::max(tau, a.time_ratio);
    s = std::max(s, a.violating_batch);
  }
  // Auxiliary classes that serve no query of the mix (every size is s or more) add nothing.
  if (!any || f <= 1e-12) return {u * profile.base_qps, Regime::kHomogeneous};
  if (f >= 1 - 1e-12) {
    // An auxiliary class that serves every query size within QoS is no auxiliary: the pool
    // is additive, each class at its own threshold (an upper bound for the others).
    double qps = u * profile.base_qps;
    for (size_t i = 0; i < profile.auxiliary.size(); ++i) {
      qps += counts[i + 1] * profile.auxiliary[i].qps;
    }
    return {qps, Regime::kHomogeneous};
  }
  double aux_qps = 0;  // sum of v_i Q_a^i, each at the most permissive threshold s'
  for (size_t i = 0; i < profile.auxiliary.size(); ++i) {
    if (counts[i + 1] == 0) continue;
    const AuxiliaryProfile& a = profile.auxiliary[i];
    auto it = a.qps_below.find(s);
    aux_qps += counts[i + 1] * (it != a.qps_below.end() ? it->second : a.qps);
  }
  const double base_large = u * profile.base_qps * (1 - f) / (1 - tau);  // u Q_b^{s+}
  const double absorbed = (1 - f) / f * aux_qps;                         // C, Eq. 14
  if (base_large <= absorbed) return {base_large / (1 - f), Regime::kBaseBottleneck};
  return {aux_qps / f + (base_large - absorbed) / base_large * u * profile.base_qps,
          Regime::kAuxiliaryBottleneck};
}

std::vector<Config> RankConfigurations(const Profile& profile, const std::vector<double>& prices,
                                       const std::vector<int>& max_counts, double budget) {
  PIPESCALE_CHECK(prices.size() == max_counts.size() &&
                  prices.size() == profile.auxiliary.size() + 1);
  std::vector<Config> out;
  std::vector<int> counts(prices.size(), 0);
  // Lexicographic enumeration, base count first, pruned by the budget.
  auto visit = [&](auto&& self, size_t k, double cost) -> void {
    if (k == counts.size()) {
      if (counts[0] >= 1) out.push_back({counts, cost, UpperBound(profile, counts)});
      return;
    }
    for (int n = 0; n <= max_counts[k] && cost + n * prices[k] <= budget + 1e-9; ++n) {
      counts[k] = n;
      self(self, k + 1, cost + n * prices[k]);
    }
    counts[k] = 0;
  };
  visit(visit, 0, 0.0);
  std::stable_sort(out.begin(), out.end(),
                   [](const Config& a, const Config& b) { return a.bound.qps > b.bound.qps; });
  return out;
}

Pick PickConfiguration(const std::vector<Config>& ranked) {
  PIPESCALE_CHECK(!ranked.empty());
  if (ranked.size() < 3 ||
      (ranked[0].counts[0] == ranked[1].counts[0] && ranked[0].counts[0] == ranked[2].counts[0])) {
    return {ranked[0], Pick::Rule::kTopThreeShareBase};
  }
  const size_t top = std::min<size_t>(10, ranked.size());
  size_t best = 0;
  double best_sum = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < top; ++i) {
    double sum = 0;
    for (size_t j = 0; j < top; ++j) {
      for (size_t k = 0; k < ranked[i].counts.size(); ++k) {
        const double d = ranked[i].counts[k] - ranked[j].counts[k];
        sum += d * d;
      }
    }
    if (sum < best_sum) {
      best_sum = sum;
      best = i;
    }
  }
  return {ranked[best], Pick::Rule::kMinSumOfSquaredDistances};
}

SearchResult KairosPlus(const std::vector<Config>& ranked,
                        const std::function<double(const Config&)>& evaluate) {
  SearchResult out;
  std::vector<char> dropped(ranked.size(), false);
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (dropped[i]) continue;
    const double qps = evaluate(ranked[i]);
    ++out.evaluations;
    dropped[i] = true;
    if (qps > out.best_qps) {
      out.best_qps = qps;
      out.best = ranked[i];
    }
    for (size_t j = i + 1; j < ranked.size(); ++j) {
      if (dropped[j]) continue;
      bool sub = true;  // ranked[j] <= ranked[i] in every count: it cannot serve more
      for (size_t k = 0; k < ranked[j].counts.size() && sub; ++k) {
        sub = ranked[j].counts[k] <= ranked[i].counts[k];
      }
      if (sub || ranked[j].bound.qps <= out.best_qps) dropped[j] = true;
    }
  }
  return out;
}

}  // namespace pipescale::optimizer::kairos
