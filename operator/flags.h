// Command-line flags of pipescale-operator (environment variables PIPESCALE_<FLAG> as fallback,
// e.g. PIPESCALE_KUBECONFIG).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "kube/client.h"

namespace pipescale::operator_main {

struct Flags {
  std::string kubeconfig;               // empty: $KUBECONFIG, in-cluster, ~/.kube/config
  std::vector<std::string> namespaces;  // empty: all namespaces
  std::string metrics_bind_address = ":8080";
  std::string health_probe_bind_address = ":8081";
  bool leader_elect = false;
  std::string leader_election_namespace;  // default: the config's namespace
  std::string leader_election_id = "pipescale-operator";
  std::string prometheus_url = "http://prometheus-operated.monitoring:9090";
  std::string router_cluster_role = "pipescale-router";
  std::string log_format = "text";  // text | json
  int workers = 2;
  double metrics_max_age_seconds = 2;
  size_t kube_max_answer_bytes = kube::ClientLimits{}.max_answer_bytes;
};

// kInvalid names the flag and the reason; "--help" and "--version" come back as kNotFound with
// the text to print.
Result<Flags> ParseFlags(int argc, char** argv);

}  // namespace pipescale::operator_main
