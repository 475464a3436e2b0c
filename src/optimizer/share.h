// Divides a pool of a scarce resource (the GPUs a set of nodes holds) among the pipelines that
// contend for it: guaranteed replicas first, then by priority, then by the goodput a replica
// buys, and max-min fair on the resource among pipelines of one priority whose replicas buy
// about as much. A pipeline gets none or enough to run each of its tasks (a
// part too small to serve would be wasted), and is asked to give up replicas it runs only for a
// gain worth the restarts. Pure.
#pragma once

#include <optional>
#include <vector>

namespace pipescale::optimizer {

// One pipeline's claim on a pool, in replicas of its class.
struct Claim {
  int priority = 0;
  int guaranteed = 0;         // spec.hardwareClasses[].guaranteedReplicas
  std::optional<int> demand;  // what its plan needs; nullopt: more than it was given
  int held = 0;               // replicas it runs in the pool now
  double unit = 1;            // the pool's resource one replica takes (> 0)
  // Fewer replicas than this serve nothing (a pipeline runs one per task it places on the pool):
  // a claim gets none or at least this many.
  int minimum = 0;
  // The goodput one more replica buys, in requests per second (the pipeline's rate over the
  // replicas it needs). Among claims of one priority the pool goes first to those whose value is
  // clearly higher (by more than kClearlyMore); among the rest, in equal parts.
  double value = 0;
};

inline constexpr double kClearlyMore = 1.25;

// Each claim's share in replicas, in the claims' order. The shares' units never exceed
// `capacity`, nor a share its demand; a share is 0 or at least the claim's minimum (those
// running theirs are given it first); and no replica is left unshared that a claim under its
// demand could take. Shares take from what claims hold (up to their demand) only when they take
// at least `min_gain` units; otherwise every claim keeps what it holds.
std::vector<int> DivideShares(double capacity, const std::vector<Claim>& claims, double min_gain);

// A pipeline claims a pool once, however many of its classes take it: its classes' claims
// (`parts`, not empty) as one. Demand, holdings, guarantees and leasts are summed (the demand
// unknown when a part's is), the unit and the value averaged over the replicas each part needs
// (what it holds where its demand is unknown), so that the merged claim's units are the parts'.
Claim MergeClaims(const std::vector<Claim>& parts);
// A merged claim's share back into its parts: each part's least first, in order, then one
// replica at a time to the part given the least for the replicas it needs, up to its demand,
// while the share's units last. Parts of one unit get exactly `share` between them when their
// demands add up to it.
std::vector<int> SplitShare(int share, const std::vector<Claim>& parts);

}  // namespace pipescale::optimizer
