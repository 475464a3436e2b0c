// `pipescale profile --deployment`: finds a Ready pod of a Deployment through the Kubernetes
// API, configured as the operator is (a kubeconfig, $KUBECONFIG, or the pod's service account).
// I/O.
#pragma once

#include <string>

#include "common/result.h"
#include "profile/pods.h"

namespace pipescale::profile {

struct ClusterTarget {
  std::string kubeconfig;  // "" for $KUBECONFIG, in-cluster, then ~/.kube/config
  std::string ns;          // "" for the config's namespace
  std::string deployment;
  std::string batch_env;  // the variant's batchSize.env
};

// The pod to measure. Errors name the Deployment and its namespace: kNotFound when it does
// not exist, kUnavailable when none of its pods is Ready, the client's kinds otherwise.
Result<PodChoice> FindDeploymentPod(const ClusterTarget& target);

}  // namespace pipescale::profile
