// MArk's provisioning over two simulated days against target tracking (what SageMaker and
// the HPA do): cost, and the minutes when the ready capacity was below the load. One step is a
// minute; a launched replica serves after its class's startup and is paid from launch.
// Prints markdown for bench/README.md.
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "api/pipeline_parse.h"
#include "optimizer/mark.h"
#include "optimizer/mark_pipeline.h"

namespace {

using pipescale::model::Pipeline;

// Diurnal load (4:1 peak to valley), 5% noise, and on day two a +100% surge for 20 minutes.
std::vector<double> Trace(int minutes) {
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(1, 0.05);
  std::vector<double> out;
  for (int t = 0; t < minutes; ++t) {
    double rate = 50 + 30 * std::sin(2 * M_PI * t / 1440.0);
    if (t >= 1440 + 600 && t < 1440 + 620) rate *= 2;
    out.push_back(std::max(0.0, rate * noise(rng)));
  }
  return out;
}

struct ClassInfo {
  std::string name;
  double capacity = 0;
  double price_per_minute = 0;
  int startup_minutes = 0;
};

struct Result {
  double cost = 0;
  int short_minutes = 0;
  double mean_capacity = 0;
};

// A fleet of replicas per class, each ready at a minute; scale-in removes booting ones first.
class Fleet {
 public:
  explicit Fleet(std::vector<ClassInfo> classes)
      : classes_(std::move(classes)), ready_(classes_.size()) {}

  void Resize(size_t k, int target, int now) {
    auto& r = ready_[k];
    while (static_cast<int>(r.size()) < target) r.push_back(now + classes_[k].startup_minutes);
    std::sort(r.begin(), r.end());
    while (static_cast<int>(r.size()) > target) r.pop_back();
  }
  int Count(size_t k) const { return static_cast<int>(ready_[k].size()); }
  double ReadyCapacity(int now) const {
    double c = 0;
    for (size_t k = 0; k < classes_.size(); ++k) {
      for (int at : ready_[k]) c += at <= now ? classes_[k].capacity : 0;
    }
    return c;
  }
  double CostPerMinute() const {
    double c = 0;
    for (size_t k = 0; k < classes_.size(); ++k) c += Count(k) * classes_[k].price_per_minute;
    return c;
  }

 private:
  std::vector<ClassInfo> classes_;
  std::vector<std::vector<int>> ready_;
};

Result RunMark(const Pipeline& p, const std::vector<ClassInfo>& classes,
               const std::vector<double>& trace) {
  Fleet fleet(classes);
  Result r;
  std::vector<std::vector<int>> plans;
  std::map<std::string, std::vector<double>> history;
  bool late = false;
  int quiet_until = 0;
  for (int t = 0; t < static_cast<int>(trace.size()); ++t) {
    history["classify"].push_back(trace[t]);
    pipescale::optimizer::PlannerInput input;
    input.history = history;
    for (size_t k = 0; k < classes.size(); ++k) {
      input.running["classify/" + classes[k].name] = fleet.Count(k);
    }
    if (late && t >= quiet_until) {
      input.late_paths = {"classify"};
      quiet_until = t + 3;
    }
    const auto plan = pipescale::optimizer::SolveMark(p, {{{"classify", trace[t]}}}, input);
    std::vector<int> want(classes.size(), 0);
    for (const auto& task : plan.tasks) {
      for (size_t k = 0; k < classes.size(); ++k) {
        if (task.hardware_class == classes[k].name) want[k] = task.replicas;
      }
    }
    plans.push_back(want);
    const std::vector<int> target = pipescale::optimizer::mark::WithCooldown(plans, 6);
    for (size_t k = 0; k < classes.size(); ++k) fleet.Resize(k, target[k], t);
    r.cost += fleet.CostPerMinute();
    const double capacity = fleet.ReadyCapacity(t);
    r.mean_capacity += capacity / trace.size();
    late = capacity < trace[t];
    r.short_minutes += late;
  }
  return r;
}

// Target tracking on one class: replicas for the rate at `utilization`, out at once (ready
// after startup), in only after `cooldown` minutes below.
Result RunTargetTracking(const ClassInfo& c, const std::vector<double>& trace, double utilization,
                         int cooldown) {
  Fleet fleet({c});
  Result r;
  std::vector<int> recent;
  for (int t = 0; t < static_cast<int>(trace.size()); ++t) {
    const int desired =
        std::max(1, static_cast<int>(std::ceil(trace[t] / (c.capacity * utilization))));
    recent.push_back(desired);
    int target = desired;
    for (size_t i = recent.size() > static_cast<size_t>(cooldown) ? recent.size() - cooldown : 0;
         i < recent.size(); ++i) {
      target = std::max(target, recent[i]);
    }
    fleet.Resize(0, target, t);
    r.cost += fleet.CostPerMinute();
    const double capacity = fleet.ReadyCapacity(t);
    r.mean_capacity += capacity / trace.size();
    r.short_minutes += capacity < trace[t];
  }
  return r;
}

}  // namespace

int main() {
  auto parsed = pipescale::api::ParsePipelineFile(std::string(PIPESCALE_SOURCE_DIR) +
                                                  "/deploy/examples/mark-classify.yaml");
  if (!parsed.pipeline) {
    std::fprintf(stderr, "mark-classify.yaml: %s\n", parsed.errors[0].ToString().c_str());
    return 1;
  }
  Pipeline p = *parsed.pipeline;
  // The burst class is a constant here; the comparison is of the main pool.
  std::erase_if(p.spec.hardware_classes,
                [](const auto& c) { return c.burst_min_warm.has_value(); });
  auto& profiles = p.spec.tasks[0].variants[0].profiles;
  std::erase_if(profiles, [](const auto& pr) { return pr.hardware_class == "t3-burst"; });

  // Capacities as MArk's planner sees them (batching tuned), from a plan at no load.
  const auto probe = pipescale::optimizer::SolveMark(p, {{{"classify", 0}}}, {});
  std::vector<ClassInfo> classes;
  for (const auto& m : probe.pools()->pools[0].members) {
    const auto& hw = p.spec.hardware_classes[p.HardwareClassIndex(m.hardware_class)];
    classes.push_back({m.hardware_class, m.capacity_rps, hw.cost_per_hour / 60,
                       static_cast<int>(std::ceil(hw.startup_seconds / 60))});
  }
  const std::vector<double> trace = Trace(2 * 1440);

  std::printf(
      "| policy | cost ($, 2 days) | vs MArk | minutes short of capacity | mean capacity / mean "
      "load |\n");
  std::printf("|---|---:|---:|---:|---:|\n");
  double mean_load = 0;
  for (double x : trace) mean_load += x / trace.size();
  struct Row {
    std::string name;
    Result result;
  };
  std::vector<Row> rows;
  for (auto [method, name] :
       {std::pair{pipescale::model::ForecastMethod::kNone, "MArk, no forecast"},
        std::pair{pipescale::model::ForecastMethod::kEwma, "MArk, EWMA"},
        std::pair{pipescale::model::ForecastMethod::kLinear, "MArk, linear trend"}}) {
    p.spec.forecast.method = method;
    rows.push_back({name, RunMark(p, classes, trace)});
  }
  for (const ClassInfo& c : classes) {
    rows.push_back(
        {"target tracking 70%, " + c.name + " only", RunTargetTracking(c, trace, 0.7, 5)});
  }
  const double mark_cost = rows[2].result.cost;
  for (const Row& row : rows) {
    std::printf("| %s | %.2f | %.2fx | %d | %.2f |\n", row.name.c_str(), row.result.cost,
                row.result.cost / mark_cost, row.result.short_minutes,
                row.result.mean_capacity / mean_load);
  }
  return 0;
}
