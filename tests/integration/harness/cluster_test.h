// The fixture of a test on the local cluster: a client with the admin's rights and a fresh
// namespace named after the test. Skips when run outside ctest (no local cluster).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "integration/harness/local_env.h"
#include "kube/client.h"

namespace pipescale::testing {

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!LocalEnv::Available()) GTEST_SKIP() << "needs the local cluster (ctest fixture local_env)";
    client_ = std::make_unique<kube::Client>(LocalEnv::Get().Config());
    ns_ = LocalEnv::Get().FreshNamespace(*client_);
  }

  std::unique_ptr<kube::Client> client_;
  std::string ns_;
};

}  // namespace pipescale::testing
