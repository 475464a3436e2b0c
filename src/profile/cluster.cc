#include "profile/cluster.h"

#include "common/strings.h"
#include "kube/client.h"
#include "kube/config.h"

namespace pipescale::profile {

Result<PodChoice> FindDeploymentPod(const ClusterTarget& target) {
  auto config = kube::LoadClusterConfig(target.kubeconfig);
  if (!config) return Error{config.error().kind, "kube config: " + config.error().message};
  const std::string ns = target.ns.empty() ? config->default_namespace : target.ns;
  const std::string where =
      "deployment " + QuoteUserText(target.deployment) + " in namespace " + QuoteUserText(ns);
  const kube::Client client(*config);
  auto deployment = client.Get(kube::ObjectPath(kube::kDeployments, ns, target.deployment));
  if (!deployment) return Error{deployment.error().kind, where + ": " + deployment.error().message};
  auto selector = LabelSelector(*deployment);
  if (!selector) return Error{selector.error().kind, where + ": " + selector.error().message};
  auto pods = client.Get(kube::CollectionPath(kube::kPods, ns) +
                         "?labelSelector=" + kube::QueryEscape(*selector));
  if (!pods) return Error{pods.error().kind, where + ": listing its pods: " + pods.error().message};
  auto chosen = PickPod(*pods, target.batch_env);
  if (!chosen) return Error{chosen.error().kind, where + ": " + chosen.error().message};
  return chosen;
}

}  // namespace pipescale::profile
