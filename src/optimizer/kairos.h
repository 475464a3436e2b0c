// Kairos (HPDC'23): the cheapest-to-run heterogeneous pool for one model under a cost budget.
// A throughput upper bound ranks every configuration within budget without running any; a
// similarity rule picks among the best; queries go to instances by min-cost matching.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pipescale::optimizer::kairos {

// Latency of one hardware class by query (batch) size, learned online: a least-squares line
// in the batch size until a bucket has `table_after` samples, then that bucket's mean with the
// largest sample dropped (warm-up and straggler outliers).
class LatencyPredictor {
 public:
  explicit LatencyPredictor(int bucket = 10, int table_after = 100)
      : bucket_(bucket), table_after_(table_after) {}

  void Add(int batch, double ms);
  double PredictMs(int batch) const;
  bool FromTable(int batch) const;  // whether PredictMs(batch) comes from the table
  // Pearson correlation of batch size and latency over all samples (Kairos: > 0.99).
  double Correlation() const;

 private:
  struct Bucket {
    int count = 0;
    double sum = 0;
    double max = 0;
  };
  int BucketOf(int batch) const;

  int bucket_;
  int table_after_;
  std::map<int, Bucket> buckets_;
  double n_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0, syy_ = 0;
};

// C_j = latency of the largest query on the base class / on class j, in (0, 1] for classes
// slower than the base: a millisecond on a slow class costs less than one on the base.
double HeterogeneityCoefficient(double base_largest_ms, double class_largest_ms);

// Rectangular min-cost assignment (Hungarian with potentials, O(min^2 max)): for each row
// the column it gets, or -1. Exactly min(rows, cols) pairs are assigned.
std::vector<int> MinCostAssignment(const std::vector<std::vector<double>>& cost);

struct Query {
  int batch = 1;
  double waited_ms = 0;
};
struct Instance {
  int hardware_class = 0;
  double busy_ms = 0;  // until its current query is done; 0 when idle
};

// Kairos's dispatch (Sec. 5.1): cost C_j * L_ij, with L_ij = busy time + predicted latency;
// a pair that would end past xi * QoS (counting the wait so far) costs the penalty
// 10 * QoS instead, not weighted by C_j, so it never beats a feasible pair. A query that has
// already waited past xi * QoS is late everywhere and keeps the plain cost, so it is served
// rather than starved behind every feasible one. Busy instances take part through their busy
// time (a caller dispatches only the pairs whose instance is idle: an implicit reservation).
// Returns, per query, the instance it goes to, or -1.
std::vector<int> Dispatch(const std::vector<Query>& queries, const std::vector<Instance>& instances,
                          const std::vector<std::function<double(int)>>& latency_ms,
                          const std::vector<double>& coefficient, double qos_ms, double xi = 0.98);

// The mix of query sizes: (batch, probability), probabilities summing to 1.
using BatchMix = std::vector<std::pair<int, double>>;

// What the upper bound needs of an auxiliary class (Sec. 5.2).
struct AuxiliaryProfile {
  std::string name;
  int violating_batch = 0;          // s: the smallest batch this class cannot serve within QoS
  double small_ratio = 0;           // f: share of queries with batch < s
  double time_ratio = 0;            // share of the base class's busy time spent on batches < s
  double qps = 0;                   // Q_a: its throughput serving only batches < s
  std::map<int, double> qps_below;  // its throughput on batches < s' for other thresholds s'
};

struct Profile {
  double base_qps = 0;  // Q_b: one base instance on the whole mix
  std::vector<AuxiliaryProfile> auxiliary;
};

// Derives the profile from latency functions (ms by batch) and the mix. qps_below is filled
// for every auxiliary class's s.
Profile DeriveProfile(const std::function<double(int)>& base_ms,
                      const std::vector<std::pair<std::string, std::function<double(int)>>>& aux,
                      const BatchMix& mix, double qos_ms);

enum class Regime { kHomogeneous, kBaseBottleneck, kAuxiliaryBottleneck };
const char* RegimeName(Regime regime);

struct Bound {
  double qps = 0;
  Regime regime = Regime::kHomogeneous;
};

// Eq. 14-15 for `counts` = (u base, v_1..v_n auxiliary), u >= 1; the auxiliary classes in use
// take the most permissive region (f', s', time ratio' = max over them), and
// Q_b^{s+} = Q_b (1 - f') / (1 - time ratio').
Bound UpperBound(const Profile& profile, const std::vector<int>& counts);

struct Config {
  std::vector<int> counts;  // base first
  double cost_per_hour = 0;
  Bound bound;
};

// Every configuration with u >= 1, counts within `max_counts` and cost within the budget,
// sorted by upper bound, highest first; ties keep ascending lexicographic order of counts.
std::vector<Config> RankConfigurations(const Profile& profile, const std::vector<double>& prices,
                                       const std::vector<int>& max_counts, double budget);

struct Pick {
  Config config;
  enum class Rule { kTopThreeShareBase, kMinSumOfSquaredDistances } rule = Rule::kTopThreeShareBase;
};

// If the top 3 share their base count, the top one; otherwise the member of the top 10 with
// the least summed squared Euclidean distance to the other nine. Precondition: non-empty.
Pick PickConfiguration(const std::vector<Config>& ranked);

// Kairos+ (Algorithm 1): evaluates configurations in upper-bound order, dropping those whose
// bound is at most the best measured and every sub-configuration of one evaluated.
struct SearchResult {
  std::optional<Config> best;
  double best_qps = 0;
  int evaluations = 0;
};
SearchResult KairosPlus(const std::vector<Config>& ranked,
                        const std::function<double(const Config&)>& evaluate);

}  // namespace pipescale::optimizer::kairos
