#include "integration/harness/local_env.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace pipescale::testing {

bool LocalEnv::Available() {
  const char* path = std::getenv("PIPESCALE_LOCAL_ENV");
  return path != nullptr && std::ifstream(path).good();
}

const LocalEnv& LocalEnv::Get() {
  static const LocalEnv env = [] {
    LocalEnv e;
    const std::string path = std::getenv("PIPESCALE_LOCAL_ENV");
    e.dir_ = path.substr(0, path.find_last_of('/'));
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("export ", 0) != 0) continue;
      const auto eq = line.find('=');
      e.vars_[line.substr(7, eq - 7)] = line.substr(eq + 1);
    }
    return e;
  }();
  return env;
}

std::string LocalEnv::Var(const std::string& name) const {
  auto it = vars_.find(name);
  return it == vars_.end() ? "" : it->second;
}

kube::ClusterConfig LocalEnv::Config() const {
  auto config = kube::LoadKubeconfig(Var("KUBECONFIG"));
  EXPECT_TRUE(config.ok()) << config.error().message;
  return config.value();
}

std::string LocalEnv::FreshNamespace(const kube::Client& client) const {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "-" + info->name();
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) {
    return std::isalnum(c) ? static_cast<char>(std::tolower(c)) : '-';
  });
  name = name.substr(0, 50);
  // A namespace left by an earlier run of the same test is deleted first. One whose pods ran on
  // a test's own node agent stays Terminating once that agent is gone (no kubelet confirms the
  // pods' end): then the run takes the name with a suffix.
  (void)client.Delete("/api/v1/namespaces/" + name);
  const std::string base = name.substr(0, 46);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    auto created = client.Create(
        "/api/v1/namespaces",
        {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}});
    if (created.ok()) return name;
    if (std::chrono::steady_clock::now() > deadline)
      name = base + "-" + std::to_string(attempt % 1000);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // still terminating
  }
  ADD_FAILURE() << "cannot create namespace " << name;
  return name;
}

void LocalEnv::CompactEtcd() const {
  const std::string endpoint = Var("PIPESCALE_ETCD");
  const std::string cmd = "etcdctl --endpoints " + endpoint + " compact $(etcdctl --endpoints " +
                          endpoint +
                          " endpoint status -w fields | sed -n 's/^\"Revision\" : //p') "
                          ">/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

int LocalEnv::Script(const std::string& args) const {
  const std::string cmd = std::string(PIPESCALE_SOURCE_DIR) + "/hack/local-env.sh " + args;
  const int status = std::system(cmd.c_str());
  return WEXITSTATUS(status);
}

}  // namespace pipescale::testing
