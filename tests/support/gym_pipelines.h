// Pipelines and options the gym's tests share: a chain of constant-time tasks on one CPU class,
// whose queues queueing theory can check.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gym/simulation.h"
#include "trace/trace.h"

namespace pipescale::testing {

// A chain of tasks, each with one variant of constant d(b) = `ms` + `per_row_ms` (b - 1) on one
// CPU class (1 CPU a pod, `startup_s` to start), and one path through all with `slo_ms`.
inline nlohmann::json Chain(const std::vector<std::string>& tasks, double ms, double slo_ms,
                            double per_row_ms = 0, double startup_s = 0) {
  nlohmann::json spec = {{"optimizer", "fa2"},
                         {"interval", "10s"},
                         {"router", nlohmann::json::object()},
                         {"hardwareClasses",
                          {{{"name", "cpu"},
                            {"startupSeconds", startup_s},
                            {"costPerHour", 0.1},
                            {"resources", {{"requests", {{"cpu", "1"}}}}}}}},
                         {"paths", {{{"name", "p"}, {"tasks", tasks}, {"sloMs", slo_ms}}}}};
  for (const std::string& t : tasks) {
    nlohmann::json task = {
        {"name", t},
        {"variants",
         {{{"name", "v"},
           {"batchSize", {{"max", 8}}},
           {"profiles",
            {{{"hardwareClass", "cpu"},
              {"latencyMs", {{"quadratic", {{"b", per_row_ms}, {"c", ms - per_row_ms}}}}}}}}}}}};
    if (&t != &tasks.back()) task["next"] = {{{"task", *(&t + 1)}}};
    spec["tasks"].push_back(task);
  }
  return {{"apiVersion", "pipescale.io/v1alpha1"},
          {"kind", "InferencePipeline"},
          {"metadata", {{"name", "chain"}, {"namespace", "default"}}},
          {"spec", spec}};
}

// No per-call overhead past d(b), so a queue is exactly what its profile says.
inline gym::Options With(const std::string& policy, const std::string& trace, unsigned seed = 7) {
  gym::Options o;
  o.call_overhead_ms = 0;
  o.policy = policy;
  o.trace = *trace::ParseTrace(trace, seed);
  o.seed = seed;
  return o;
}

}  // namespace pipescale::testing
