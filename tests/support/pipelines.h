// Pipelines tests share: the smallest valid InferencePipeline, as the apiserver stores it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace pipescale::testing {

// One task `a` with one variant on one CPU class, and one path `p` with a 100 ms SLO.
inline nlohmann::json OneTaskPipeline(const std::string& name, const std::string& ns = "") {
  nlohmann::json metadata = {{"name", name}};
  if (!ns.empty()) metadata["namespace"] = ns;
  return {{"apiVersion", "pipescale.io/v1alpha1"},
          {"kind", "InferencePipeline"},
          {"metadata", metadata},
          {"spec",
           {{"hardwareClasses", {{{"name", "cpu"}}}},
            {"tasks",
             {{{"name", "a"},
               {"variants",
                {{{"name", "v"},
                  {"profiles",
                   {{{"hardwareClass", "cpu"}, {"latencyMs", {{"quadratic", {{"c", 5}}}}}}}}}}}}}},
            {"paths", {{{"name", "p"}, {"tasks", {"a"}}, {"sloMs", 100}}}}}}};
}

}  // namespace pipescale::testing
