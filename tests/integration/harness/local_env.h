// Access to the local cluster of real parts that hack/local-env.sh started for ctest (the
// `local_env` fixture): its kubeconfig, etcd and Prometheus endpoints, and a fresh namespace
// per test.
#pragma once

#include <map>
#include <string>

#include "kube/client.h"

namespace pipescale::testing {

class LocalEnv {
 public:
  // Reads the env file named by $PIPESCALE_LOCAL_ENV; false when it is not set (the binary
  // was run outside ctest), so the test can skip with that reason.
  static bool Available();
  static const LocalEnv& Get();

  std::string Var(const std::string& name) const;
  kube::ClusterConfig Config() const;
  // Creates a namespace named after the running test, so tests on one apiserver never
  // see each other's objects.
  std::string FreshNamespace(const kube::Client& client) const;
  // Compacts etcd's history up to now, so older resourceVersions expire (HTTP 410).
  void CompactEtcd() const;
  // Runs hack/local-env.sh with these arguments, returns its exit code.
  int Script(const std::string& args) const;

 private:
  std::map<std::string, std::string> vars_;
  std::string dir_;
};

#define PIPESCALE_REQUIRE_LOCAL_ENV()                                                   \
  do {                                                                                  \
    if (!::pipescale::testing::LocalEnv::Available()) {                                 \
      GTEST_SKIP() << "needs the local cluster: run through ctest (fixture local_env)"; \
    }                                                                                   \
  } while (false)

}  // namespace pipescale::testing
