#include "kube/config.h"

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <optional>

#include "common/file.h"

namespace pipescale::kube {
namespace {

// Fills `pem` from `<key>-data` (base64) or `<key>` (a file relative to the kubeconfig).
Status PemField(const YAML::Node& node, const std::string& key, const std::string& base_dir,
                std::string& pem) {
  if (node[key + "-data"]) {
    auto decoded = Base64Decode(node[key + "-data"].as<std::string>(), key + "-data");
    if (!decoded) return decoded.error();
    pem = *decoded;
  } else if (node[key]) {
    auto file = node[key].as<std::string>();
    if (!file.empty() && file[0] != '/') file = base_dir + "/" + file;
    auto text = ReadFileText(file);
    if (!text) return text.error();
    pem = *text;
  }
  return Done{};
}

std::optional<YAML::Node> FindNamed(const YAML::Node& list, const std::string& name) {
  for (auto it = list.begin(); it != list.end(); ++it) {
    const YAML::Node item = *it;
    if (item["name"] && item["name"].as<std::string>() == name) return item;
  }
  return std::nullopt;
}

}  // namespace

Result<ClusterConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto text = ReadFileText(path);
  if (!text) return text.error();
  const std::string base_dir =
      path.find('/') == std::string::npos ? "." : path.substr(0, path.find_last_of('/'));
  try {
    const YAML::Node root = YAML::Load(*text);
    const std::string name =
        context.empty() ? root["current-context"].as<std::string>("") : context;
    if (name.empty()) return Error{ErrorKind::kInvalid, path + ": no current-context"};
    const auto ctx = FindNamed(root["contexts"], name);
    if (!ctx) return Error{ErrorKind::kInvalid, path + ": no context \"" + name + "\""};
    const auto cluster_name = (*ctx)["context"]["cluster"].as<std::string>("");
    const auto user_name = (*ctx)["context"]["user"].as<std::string>("");
    const auto cluster = FindNamed(root["clusters"], cluster_name);
    if (!cluster) {
      return Error{ErrorKind::kInvalid, path + ": no cluster \"" + cluster_name + "\""};
    }
    ClusterConfig config;
    const YAML::Node c = (*cluster)["cluster"];
    config.server = c["server"].as<std::string>("");
    if (config.server.empty()) {
      return Error{ErrorKind::kInvalid, path + ": cluster \"" + cluster_name + "\" has no server"};
    }
    config.insecure_skip_tls_verify = c["insecure-skip-tls-verify"].as<bool>(false);
    if (auto s = PemField(c, "certificate-authority", base_dir, config.ca_pem); !s) {
      return s.error();
    }
    if ((*ctx)["context"]["namespace"]) {
      config.default_namespace = (*ctx)["context"]["namespace"].as<std::string>();
    }
    if (const auto user = FindNamed(root["users"], user_name); !user_name.empty() && user) {
      const YAML::Node u = (*user)["user"];
      config.token = u["token"].as<std::string>("");
      if (u["tokenFile"]) config.token_file = u["tokenFile"].as<std::string>();
      if (auto s = PemField(u, "client-certificate", base_dir, config.client_cert_pem); !s) {
        return s.error();
      }
      if (auto s = PemField(u, "client-key", base_dir, config.client_key_pem); !s) {
        return s.error();
      }
    }
    return config;
  } catch (const YAML::Exception& e) {
    return Error{ErrorKind::kInvalid, path + ": " + e.what()};
  }
}

Result<ClusterConfig> InClusterConfig() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr) {
    return Error{ErrorKind::kNotFound, "not in a cluster: KUBERNETES_SERVICE_HOST is not set"};
  }
  const std::string dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  ClusterConfig config;
  const std::string h = host;
  config.server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
  config.token_file = dir + "/token";
  auto ca = ReadFileText(dir + "/ca.crt");
  if (!ca) return ca.error();
  config.ca_pem = *ca;
  if (auto ns = ReadFileText(dir + "/namespace")) config.default_namespace = *ns;
  return config;
}

Result<ClusterConfig> LoadClusterConfig(const std::string& kubeconfig_path) {
  if (!kubeconfig_path.empty()) return LoadKubeconfig(kubeconfig_path);
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::string first = env;
    return LoadKubeconfig(first.substr(0, first.find(':')));
  }
  auto in_cluster = InClusterConfig();
  if (in_cluster.ok() || in_cluster.error().kind != ErrorKind::kNotFound) return in_cluster;
  const char* home = std::getenv("HOME");
  return LoadKubeconfig(std::string(home != nullptr ? home : "") + "/.kube/config");
}

Result<std::string> Base64Decode(const std::string& text, const std::string& what) {
  std::string compact;
  for (char c : text) {
    if (c != '\n' && c != '\r' && c != ' ') compact += c;
  }
  std::string out(compact.size() / 4 * 3 + 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(compact.data()),
                                static_cast<int>(compact.size()));
  if (n < 0) return Error{ErrorKind::kInvalid, what + ": not valid base64"};
  size_t padding = 0;
  while (padding < 2 && padding < compact.size() && compact[compact.size() - 1 - padding] == '=') {
    ++padding;
  }
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

}  // namespace pipescale::kube
