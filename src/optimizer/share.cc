#include "optimizer/share.h"

#include <algorithm>
#include <cassert>
#include <climits>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>

namespace pipescale::optimizer {
namespace {

constexpr double kEps = 1e-9;

int DemandOf(const Claim& c) { return c.demand.value_or(INT_MAX); }
// The fewest replicas worth giving: a pipeline that runs fewer serves nothing.
int LeastOf(const Claim& c) { return std::min(std::max(c.minimum, 0), DemandOf(c)); }

// One division in progress: what each claim has, the units left, and which claims were found
// not worth giving to (their least did not fit when their turn came).
struct Division {
  const std::vector<Claim>& claims;
  std::vector<int> shares;
  std::vector<bool> out;
  double left;

  Division(const std::vector<Claim>& c, double capacity)
      : claims(c), shares(c.size(), 0), out(c.size(), false), left(capacity) {}

  // Raises claim i toward `to` replicas (and to at least its least) as far as the pool allows;
  // rules it out when not even its least fits.
  void Grant(size_t i, int to) {
    const Claim& c = claims[i];
    if (out[i]) return;
    to = std::max(to, shares[i] == 0 ? LeastOf(c) : 0);
    if (to <= shares[i]) return;
    const int fits = shares[i] + static_cast<int>(std::floor((left + kEps) / c.unit));
    if (shares[i] == 0 && LeastOf(c) > fits) {
      out[i] = true;
      return;
    }
    const int granted = std::min(to, fits);
    left -= (granted - shares[i]) * c.unit;
    shares[i] = granted;
  }

  bool Eligible(size_t i, int tier) const {
    const Claim& c = claims[i];
    return c.priority == tier && !out[i] && !(shares[i] == 0 && LeastOf(c) > 1) &&
           shares[i] < DemandOf(c) && c.unit <= left + kEps;
  }

  // Filling within one tier: one replica at a time toward demand, to the claims whose replicas
  // buy clearly the most, of those the least given first, while the pool has room.
  void Fill(int tier) {
    while (true) {
      double best = -1;
      for (size_t i = 0; i < claims.size(); ++i) {
        if (Eligible(i, tier)) best = std::max(best, claims[i].value);
      }
      int next = -1;
      for (size_t i = 0; i < claims.size(); ++i) {
        if (!Eligible(i, tier) || claims[i].value * kClearlyMore < best) continue;
        if (next < 0 || shares[i] * claims[i].unit < shares[next] * claims[next].unit - kEps) {
          next = static_cast<int>(i);
        }
      }
      if (next < 0) return;
      ++shares[next];
      left -= claims[next].unit;
    }
  }
};

// The claims' indices by priority, highest first; ties in the claims' order.
std::vector<size_t> ByPriority(const std::vector<Claim>& claims) {
  std::vector<size_t> order(claims.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return claims[a].priority > claims[b].priority; });
  return order;
}

// `floors` first (in priority order), then, tier by tier, each claim's least (those running it
// first) and equal parts up to demand.
std::vector<int> Divide(double capacity, const std::vector<Claim>& claims,
                        const std::vector<int>& floors) {
  Division d(claims, capacity);
  const std::vector<size_t> order = ByPriority(claims);
  for (const size_t i : order) {
    if (floors[i] > 0) d.Grant(i, floors[i]);
  }
  for (size_t k = 0; k < order.size();) {
    const int tier = claims[order[k]].priority;
    size_t end = k;
    while (end < order.size() && claims[order[end]].priority == tier) ++end;
    std::vector<size_t> tier_order(order.begin() + static_cast<long>(k),
                                   order.begin() + static_cast<long>(end));
    std::stable_partition(tier_order.begin(), tier_order.end(),
                          [&](size_t i) { return claims[i].held >= LeastOf(claims[i]); });
    for (const size_t i : tier_order) d.Grant(i, 0);
    d.Fill(tier);
    k = end;
  }
  return d.shares;
}

}  // namespace

std::vector<int> DivideShares(double capacity, const std::vector<Claim>& claims, double min_gain) {
  std::vector<int> floors;
  for (const Claim& c : claims) {
    assert(c.unit > 0);
    floors.push_back(std::min(std::max(c.guaranteed, 0), DemandOf(c)));
  }
  std::vector<int> shares = Divide(capacity, claims, floors);
  // What the division takes from running pipelines goes to the others (the fill leaves nothing a
  // claim under its demand could take), so it is also what they gain by it.
  double taken = 0;
  for (size_t i = 0; i < claims.size(); ++i) {
    const Claim& c = claims[i];
    taken += std::max(0, std::min(c.held, DemandOf(c)) - shares[i]) * c.unit;
  }
  if (taken == 0 || taken + kEps >= min_gain) return shares;
  // Too small a gain to restart pods for: what runs stays, the rest is divided as before.
  for (size_t i = 0; i < claims.size(); ++i) {
    floors[i] = std::max(floors[i], std::min(claims[i].held, DemandOf(claims[i])));
  }
  return Divide(capacity, claims, floors);
}

namespace {

// What a part of a pipeline's claim weighs among its parts: the replicas it needs, else those it
// runs.
double WeightOf(const Claim& c) { return c.demand.value_or(c.held); }

}  // namespace

Claim MergeClaims(const std::vector<Claim>& parts) {
  assert(!parts.empty());
  Claim out{.priority = parts[0].priority, .demand = 0};
  double total = 0;
  for (const Claim& c : parts) {
    out.priority = std::max(out.priority, c.priority);
    out.guaranteed += c.guaranteed;
    out.demand = out.demand && c.demand ? std::optional(*out.demand + *c.demand) : std::nullopt;
    out.held += c.held;
    out.minimum += c.minimum;
    total += WeightOf(c);
  }
  // Averaged over the parts' weights (all alike where no part needs or runs a replica), summed
  // before dividing, so that parts of one unit or one value merge into exactly it.
  double units = 0, value = 0;
  for (const Claim& c : parts) {
    const double w = total > 0 ? WeightOf(c) : 1;
    units += w * c.unit;
    value += w * c.value;
  }
  const double sum = total > 0 ? total : static_cast<double>(parts.size());
  out.unit = units / sum;
  out.value = value / sum;
  return out;
}

std::vector<int> SplitShare(int share, const std::vector<Claim>& parts) {
  std::vector<int> out(parts.size(), 0);
  if (parts.size() == 1) {
    out[0] = share;
    return out;
  }
  double left = share * MergeClaims(parts).unit + kEps;
  for (size_t i = 0; i < parts.size(); ++i) {
    const int least = LeastOf(parts[i]);
    if (least * parts[i].unit > left) continue;
    out[i] = least;
    left -= least * parts[i].unit;
  }
  const auto weight = [&](size_t i) { return std::max(WeightOf(parts[i]), 1.0); };
  while (true) {
    int next = -1;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (out[i] >= DemandOf(parts[i]) || parts[i].unit > left) continue;
      // out[i] / weight(i) below next's, without dividing.
      if (next < 0 || out[i] * weight(next) < out[next] * weight(i)) next = static_cast<int>(i);
    }
    if (next < 0) return out;
    ++out[next];
    left -= parts[next].unit;
  }
}

}  // namespace pipescale::optimizer
