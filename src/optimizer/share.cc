#include "optimizer/share.h"

#include <algorithm>
#include <cassert>
#include <climits>
#include <functional>

namespace pipescale::optimizer {
namespace {

constexpr double kEps = 1e-9;

int DemandOf(const Claim& c) { return c.demand.value_or(INT_MAX); }

// Progressive filling: each tier (by priority, highest first) raises its claims one replica at a
// time toward `target`, the least given first, while the pool has room; `shares` holds what is
// already given and `left` the units not.
void Fill(const std::vector<Claim>& claims, const std::vector<int>& target,
          std::vector<int>& shares, double& left) {
  std::vector<int> tiers;
  for (const Claim& c : claims) tiers.push_back(c.priority);
  std::sort(tiers.begin(), tiers.end(), std::greater<>());
  tiers.erase(std::unique(tiers.begin(), tiers.end()), tiers.end());
  for (const int tier : tiers) {
    while (true) {
      int next = -1;
      for (size_t i = 0; i < claims.size(); ++i) {
        const Claim& c = claims[i];
        if (c.priority != tier || shares[i] >= target[i] || c.unit > left + kEps) continue;
        if (next < 0 || shares[i] * c.unit < shares[next] * claims[next].unit - kEps) {
          next = static_cast<int>(i);
        }
      }
      if (next < 0) break;
      ++shares[next];
      left -= claims[next].unit;
    }
  }
}

// The shares with `floors` given first (in priority order), then demand.
std::vector<int> Divide(double capacity, const std::vector<Claim>& claims,
                        const std::vector<int>& floors) {
  std::vector<int> shares(claims.size(), 0);
  std::vector<int> demand;
  for (const Claim& c : claims) demand.push_back(DemandOf(c));
  double left = capacity;
  Fill(claims, floors, shares, left);
  Fill(claims, demand, shares, left);
  return shares;
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

}  // namespace pipescale::optimizer
