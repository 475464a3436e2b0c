// Varied InferencePipeline statuses for the status tests: every field, each optional part present
// or not, each kind of plan (none, Loki's, Kairos's and MArk's pools), numbers at the status's
// precision (api::RoundQuantity, api::RoundFraction) so that the writer renders them exactly.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "api/plan_json.h"
#include "model/status.h"
#include "optimizer/problem.h"

namespace pipescale::testing {

class StatusSampler {
 public:
  explicit StatusSampler(unsigned seed) : rng_(seed) {}

  model::PipelineStatus Next() {
    model::PipelineStatus s;
    s.observed_generation = Int(0, 1000000);
    for (int i = Int(0, 4); i > 0; --i) s.conditions.push_back(Condition(i));
    if (Coin()) s.plan = Plan();
    if (Coin()) s.solver = Solver();
    if (Coin()) s.total_replicas = Int(0, 500);
    if (Coin()) s.cost_per_hour = Quantity();
    if (Coin()) s.observed = Observed();
    if (Coin()) s.capacity = Capacity();
    for (int i = Int(0, 2); i > 0; --i) {
      s.unschedulable.push_back({.deployment = Name("d"), .pods = Int(1, 9), .message = Text()});
    }
    if (Coin()) s.memory = Memory();
    return s;
  }

 private:
  bool Coin() { return rng_() % 2 == 0; }
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  double Real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  // A rate, a cost or a latency, and a share, as the status rounds them; now and then a large one.
  double Quantity() { return api::RoundQuantity(Coin() ? Real(0, 1000) : Real(0, 1e10)); }
  double Fraction() { return api::RoundFraction(Real(0, 1)); }
  std::string Name(const char* prefix) { return prefix + std::to_string(Int(0, 5)); }
  // Text a person or a scheduler writes: quotes, non-ASCII, newlines.
  std::string Text() {
    static const char* const kTexts[] = {"", "0/6 nodes are available: 6 Insufficient cpu.",
                                         "\"quoted\"\n second line", "größer als 5 µs"};
    return kTexts[Int(0, 3)];
  }
  std::string Time() { return "2026-11-27T09:" + std::to_string(10 + Int(0, 49)) + ":00Z"; }
  std::map<std::string, double> Quantities(const char* prefix) {
    std::map<std::string, double> out;
    for (int i = Int(0, 3); i > 0; --i) out[Name(prefix)] = Quantity();
    return out;
  }

  model::Condition Condition(int i) {
    static const char* const kTypes[] = {"Ready", "MetricsAvailable", "Feasible", "PlanApplied"};
    static const char* const kStatuses[] = {"True", "False", "Unknown"};
    model::Condition c{.type = kTypes[i - 1], .status = kStatuses[Int(0, 2)]};
    if (Coin()) c.reason = "Reconciled";
    c.message = Text();
    if (Coin()) c.observed_generation = Int(0, 1000000);
    if (Coin()) c.last_transition_time = Time();
    return c;
  }

  model::AppliedPlan Plan() {
    model::AppliedPlan out;
    model::Plan& plan = out.plan;
    for (int i = Int(0, 4); i > 0; --i) {
      plan.tasks.push_back({.task = "t" + std::to_string(i),
                            .variant = Name("v"),
                            .hardware_class = Name("hw"),
                            .replicas = Int(0, 10000),
                            .batch_size = Int(1, 4096),
                            .latency_ms = Quantity(),
                            // The optimizer's figure for a queue that never drains, too.
                            .queue_ms = Coin() ? Quantity() : optimizer::kMaxQueueMs,
                            .load_rps = Quantity()});
      out.deployments.push_back(Name("deployment-"));
    }
    for (int i = Int(0, 3); i > 0; --i) {
      plan.paths.push_back({.name = Name("p"),
                            .slo_ms = Int(1, 5000) * 0.5,
                            .predicted_latency_ms = Coin() ? Quantity() : optimizer::kMaxQueueMs});
    }
    plan.cost_per_hour = Quantity();
    plan.served_fraction = Fraction();
    switch (Int(0, 2)) {
      case 1:
        plan.detail = AccuracyScaling();
        break;
      case 2:
        plan.detail = Pools();
        break;
      default:
        break;
    }
    return out;
  }

  model::AccuracyScalingPlan AccuracyScaling() {
    model::AccuracyScalingPlan loki{.phase = static_cast<model::Phase>(Int(0, 2)),
                                    .accuracy = Fraction()};
    for (int i = Int(0, 2); i > 0; --i) {
      loki.variant_paths.push_back({.path = Name("p"),
                                    .variants = {Name("v"), Name("v")},
                                    .share = Fraction(),
                                    .accuracy = Fraction(),
                                    .latency_ms = Quantity()});
    }
    for (int i = Int(0, 2); i > 0; --i) {
      loki.routing.push_back({.path = Name("p"),
                              .task = Name("t"),
                              .from_variant = Coin() ? "" : Name("v"),
                              .to = {{Name("v"), Fraction()}, {Name("v"), Fraction()}}});
    }
    for (int i = Int(0, 2); i > 0; --i) {
      loki.backups.push_back({.task = Name("t"), .variant = Name("v"), .spare_rps = Quantity()});
    }
    return loki;
  }

  model::PoolPlan Pools() {
    model::PoolPlan pools;
    if (Coin()) pools.upper_bound_qps = Quantity();
    if (Coin()) {
      pools.forecast_step_seconds = Int(1, 60) * 10.0;
      for (int i = Int(1, 5); i > 0; --i) pools.forecast_rps.push_back(Quantity());
    }
    for (int i = Int(0, 2); i > 0; --i) {
      // A QoS is a latency, within limits::kMaxMs as every latency a spec names.
      model::Pool pool{.task = Name("t"), .qos_ms = Int(1, 5000) * 0.5};
      for (int j = Int(1, 3); j > 0; --j) {
        pool.members.push_back({.hardware_class = Name("hw"),
                                .replicas = Int(0, 100),
                                .max_query = Int(1, 4096),
                                .coefficient = Fraction(),
                                .capacity_rps = Quantity()});
      }
      if (Coin()) pool.spill_class = Name("burst");
      if (Coin()) pool.upper_bound_qps = Quantity() + 1;
      pools.pools.push_back(std::move(pool));
    }
    return pools;
  }

  model::SolverRecord Solver() {
    return {.name = Coin() ? "fa2" : "loki",
            .status = static_cast<model::SolveStatus>(Int(0, 3)),
            .objective = {.value = Real(-1e6, 1e6), .unit = Coin() ? "replicas" : "accuracy"},
            .duration_ms = Real(0, 5000)};
  }

  std::vector<model::SizeShare> Mix() {
    std::vector<model::SizeShare> out;
    for (int i = Int(1, 4); i > 0; --i) out.push_back({.size = Int(1, 4096), .share = Fraction()});
    return out;
  }

  model::ObservedLoad Observed() {
    model::ObservedLoad out{.path_rates_rps = Quantities("p")};
    if (Coin()) out.demand_rps = Quantities("p");
    if (Coin()) out.arrival_rate_rps = Quantity();
    if (Coin()) {
      model::ObservedDataPlane dp{.drops_rps = Quantities("reason"),
                                  .shed_rps = {},
                                  .reroutes_rps = Quantity(),
                                  .spill_share = {{Name("t"), Fraction()}},
                                  .pool_waiting = Quantities("t"),
                                  .batch_rows = Quantities("t")};
      for (int i = Int(0, 2); i > 0; --i) dp.shed_rps[Name("p")] = Quantities("why");
      if (Coin()) dp.planned_accuracy = Fraction();
      if (Coin()) dp.served_accuracy = Fraction();
      out.data_plane = std::move(dp);
    }
    if (Coin()) {
      model::QuerySizesRecord sizes{
          .source = Coin() ? model::MixSource::kSpec : model::MixSource::kMeasured,
          .planned = Mix()};
      if (Coin()) sizes.measured = Mix();
      if (Coin()) sizes.shift = Fraction();
      if (Coin()) sizes.settling_since = Time();
      out.query_sizes = std::move(sizes);
    }
    for (int i = Coin() ? Int(1, 2) : 0; i > 0; --i) out.profiles.push_back(Profile());
    return out;
  }

  model::ProfileKey Key() { return {Name("t"), Name("v"), Name("hw")}; }

  model::ObservedProfile Profile() {
    model::ObservedProfile out{.key = Key(),
                               .points = {},
                               .ratio = std::nullopt,
                               .planned_ratio = api::RoundFraction(Real(0.1, 3))};
    if (Coin()) out.ratio = api::RoundFraction(Real(0.1, 3));
    for (int b = Int(1, 4); b <= 32; b += Int(1, 8)) {
      out.points.push_back({.batch = b,
                            .measured_ms = Quantity(),
                            .declared_ms = Quantity(),
                            .batches = Quantity()});
    }
    return out;
  }

  std::vector<model::ClassCapacity> Capacity() {
    std::vector<model::ClassCapacity> out;
    for (int i = Int(0, 3); i > 0; --i) {
      out.push_back({.hardware_class = Name("hw"),
                     .nodes = Int(0, 50),
                     .placeable = Int(0, 100),
                     .scheduled = Int(0, 100),
                     .preemptible = Coin() ? 0 : Int(1, 100),
                     .full_reason = Coin() ? "" : "no room left for nvidia.com/gpu"});
    }
    return out;
  }

  model::StatusMemory Memory() {
    model::StatusMemory out;
    double since = Int(0, 1000000);
    for (int i = Int(0, 6); i > 0; --i) {
      model::Recommendation r{.since = since, .replicas = {}};
      for (int j = Int(0, 3); j > 0; --j) r.replicas[Name("d")] = Int(0, 10000);
      out.recommendations.push_back(std::move(r));
      since += Real(0, 100);
    }
    if (Coin()) out.guard_quiet_until = Real(0, 2e9);
    if (Coin()) {
      const int sizes = Int(1, 5);
      for (int size = 1; size <= sizes; ++size) {
        out.query_mix.push_back({.size = size * 3, .weight = Real(0.001, 1e6)});
      }
      out.query_mix_for = Coin() ? "" : "c0ffee";
    }
    for (int i = Coin() ? Int(1, 2) : 0; i > 0; --i) {
      model::ProfileCorrection c{
          .key = Key(), .ratio = Real(0.1, 3), .points = {}, .declared = "0123456789abcdef"};
      for (int b = Int(1, 4); b <= 32; b += Int(1, 8)) c.points.push_back({b, Real(0.1, 1000)});
      out.profiles.push_back(std::move(c));
    }
    for (int i = Coin() ? Int(1, 3) : 0; i > 0; --i) out.quiet_since[Name("p")] = Real(0, 2e9);
    for (int i = Coin() ? Int(1, 2) : 0; i > 0; --i) out.held_since[Name("p")] = Real(0, 2e9);
    for (int i = Coin() ? Int(1, 3) : 0; i > 0; --i) out.sleeping_paths.push_back(Name("p"));
    for (int i = Coin() ? Int(1, 2) : 0; i > 0; --i) {
      std::vector<model::LoadReturn>& returns = out.returns[Name("p")];
      for (int j = Int(1, 4); j > 0; --j) returns.push_back({Real(0, 2e9), Real(0, 1e4)});
    }
    for (int i = Coin() ? Int(1, 2) : 0; i > 0; --i) {
      out.awake_ahead[Name("p")] = {.until = Real(0, 2e9), .rate_rps = Real(0, 1e4)};
    }
    if (Coin()) {
      for (int i = Int(0, 3); i > 0; --i) {
        out.headroom.paths[Name("p")] = {.headroom = Real(1, 2), .raised_from = Real(1, 2)};
      }
      out.headroom.quiet_until = Coin() ? 0 : Real(0, 2e9);
      out.headroom.held_until = Coin() ? 0 : Real(0, 2e9);
    }
    return out;
  }

  std::mt19937 rng_;
};

}  // namespace pipescale::testing
