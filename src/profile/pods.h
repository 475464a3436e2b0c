// Which pod of a Deployment `pipescale profile --deployment` measures: the Deployment's label
// selector, and one of its Ready pods with an address. Pure: JSON as the API server returns it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"

namespace pipescale::profile {

struct PodChoice {
  std::string name;
  std::string address;         // podIP:port
  std::string hardware_class;  // its pipescale.io/hardware-class label; "" when it has none
  int batch = 0;               // the variant's batch env in its containers; 0 when not set
  int ready = 0;               // Ready pods of the Deployment
  int pods = 0;                // all its pods
};

// spec.selector as a label selector query ("app=detect,tier in (a,b),!canary"). kInvalid when
// the Deployment has none.
Result<std::string> LabelSelector(const nlohmann::json& deployment);

// The first (by name) of a PodList's pods that is Ready, not being deleted and has an IP, at
// the container port named "http", else the first declared, else 8080 (the router's rule).
// `batch_env` is the variant's batchSize.env ("" when the router batches). kUnavailable when
// none is Ready.
Result<PodChoice> PickPod(const nlohmann::json& pod_list, const std::string& batch_env);

}  // namespace pipescale::profile
