// Where the API server is and how to authenticate: from a kubeconfig file or from the pod's
// service account (in-cluster).
#pragma once

#include <string>

#include "common/result.h"

namespace pipescale::kube {

struct ClusterConfig {
  std::string server;      // e.g. https://127.0.0.1:6443
  std::string ca_pem;      // trusted CA certificates (PEM); empty means the system store
  std::string token;       // bearer token
  std::string token_file;  // re-read per request when set (service-account tokens rotate)
  std::string client_cert_pem;
  std::string client_key_pem;
  bool insecure_skip_tls_verify = false;  // only when the kubeconfig says so
  std::string default_namespace = "default";
};

// Reads a kubeconfig; `context` empty means its current-context. kInvalid names what is
// missing or malformed.
Result<ClusterConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");

// The service account mounted into a pod: KUBERNETES_SERVICE_HOST/PORT, token, CA, namespace.
// kNotFound outside a pod.
Result<ClusterConfig> InClusterConfig();

// The usual order: the explicit path, else $KUBECONFIG, else in-cluster, else ~/.kube/config.
Result<ClusterConfig> LoadClusterConfig(const std::string& kubeconfig_path);

// Base64 as the API server writes it (a kubeconfig's *-data, a Secret's data), line breaks and
// spaces ignored; kInvalid naming `what` when it is not base64.
Result<std::string> Base64Decode(const std::string& text, const std::string& what);

}  // namespace pipescale::kube
