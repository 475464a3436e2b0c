#include "integration/harness/local_env.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>

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
  // A namespace left by an earlier run of the same test is deleted first.
  (void)client.Delete("/api/v1/namespaces/" + name);
  for (int i = 0; i < 100; ++i) {
    auto created = client.Create(
        "/api/v1/namespaces",
        {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}});
    if (created.ok()) return name;
    std::system("sleep 0.1");  // still terminating
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
