// Kubernetes objects the tests make as a user would, not as the operator does.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace pipescale::testing {

// A Deployment named `name` of `replicas` pods with `pod_spec`, selected by the label app=`name`:
// someone else's, with none of pipescale's labels.
inline nlohmann::json PlainDeployment(const std::string& name, int replicas,
                                      nlohmann::json pod_spec) {
  const nlohmann::json labels = {{"app", name}};
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", labels}}},
            {"template", {{"metadata", {{"labels", labels}}}, {"spec", std::move(pod_spec)}}}}}};
}

}  // namespace pipescale::testing
