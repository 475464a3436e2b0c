// The informer across an apiserver restart: it reconnects with backoff and resumes. Runs alone
// (RUN_SERIAL): the restart would break every other test's connections.
#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>

#include "integration/harness/local_env.h"
#include "integration/harness/objects.h"
#include "integration/harness/wait.h"
#include "kube/informer.h"

namespace pipescale::kube {
namespace {

using testing::Eventually;

using testing::LocalEnv;
using namespace std::chrono_literals;

TEST(Informer, ResumesAfterTheApiserverRestarts) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const Client client(LocalEnv::Get().Config());
  const std::string ns = LocalEnv::Get().FreshNamespace(client);
  Informer informer(
      client,
      {.type = kDeployments, .namespace_name = ns, .min_backoff = 100ms, .max_backoff = 1000ms},
      [](const std::string&, const nlohmann::json&) {});
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(10s));

  ASSERT_EQ(LocalEnv::Get().Script("restart-apiserver " + LocalEnv::Get().Var("PIPESCALE_DIR")), 0);
  const nlohmann::json deployment = testing::PlainDeployment(
      "after-restart", 0, {{"containers", {{{"name", "c"}, {"image", "x"}}}}});
  ASSERT_TRUE(client.Create(CollectionPath(kDeployments, ns), deployment).ok());
  EXPECT_TRUE(Eventually([&] { return informer.Get(ns + "/after-restart").has_value(); }, 20s));
  EXPECT_GE(informer.reconnects(), 1);
  informer.Stop();
}

}  // namespace
}  // namespace pipescale::kube
