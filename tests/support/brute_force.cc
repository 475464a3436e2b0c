#include "support/brute_force.h"

#include <cmath>
#include <functional>
#include <map>
#include <vector>

namespace pipescale::testing {

std::optional<BruteForceResult> BruteForce(const model::Pipeline& pipeline,
                                           const model::Workload& workload) {
  const auto& spec = pipeline.spec;
  std::map<std::string, double> rate;
  for (const auto& path : spec.paths) {
    for (const auto& t : path.tasks) rate[t] += workload.path_rates_rps.at(path.name);
  }
  struct Option {
    double latency;
    std::int64_t replicas;
    double cost;
  };
  std::vector<std::vector<Option>> options(spec.tasks.size());
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const auto& task = spec.tasks[i];
    const double lambda = rate[task.name];
    const model::Variant& v = task.MostAccurateVariant();
    for (const auto& profile : v.profiles) {
      const double price =
          spec.hardware_classes[pipeline.HardwareClassIndex(profile.hardware_class)].cost_per_hour;
      for (int b = 1; b <= (lambda > 0 ? profile.latency.MaxBatch(v.max_batch) : 1); ++b) {
        const double d = profile.latency.Ms(b);
        const double q = b == 1 ? 0 : 1000.0 * (b - 1) / lambda;
        std::int64_t n = static_cast<std::int64_t>(std::ceil(lambda * d / (1000.0 * b) - 1e-9));
        if (n < 1) n = 1;
        options[i].push_back({d + q, n, n * price});
      }
    }
  }
  std::optional<BruteForceResult> best;
  std::vector<double> latency(spec.tasks.size());
  std::function<void(size_t, std::int64_t, double)> visit = [&](size_t i, std::int64_t replicas,
                                                                double cost) {
    if (i == spec.tasks.size()) {
      for (const auto& path : spec.paths) {
        double total = 0;
        for (const auto& t : path.tasks) total += latency[pipeline.TaskIndex(t)];
        if (total > path.slo_ms + 1e-9) return;
      }
      if (!best || replicas < best->replicas ||
          (replicas == best->replicas && cost < best->cost_per_hour - 1e-9)) {
        best = BruteForceResult{replicas, cost};
      }
      return;
    }
    for (const Option& o : options[i]) {
      latency[i] = o.latency;
      visit(i + 1, replicas + o.replicas, cost + o.cost);
    }
  };
  visit(0, 0, 0);
  return best;
}

}  // namespace pipescale::testing
