// Leader election against a real kube-apiserver, when an attempt throws. No real part throws
// here, so the fault is a fake: a clock that throws (named as such), standing for any bug
// inside an attempt.
#include "kube/leader_election.h"

#include <gtest/gtest.h>

#include <ctime>
#include <stdexcept>

#include "common/guard.h"
#include "integration/harness/local_env.h"

namespace pipescale::kube {
namespace {

using testing::LocalEnv;

TEST(LeaderElector, AnAttemptThatThrowsIsCountedAndRetried) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const Client client(LocalEnv::Get().Config());
  const std::string ns = LocalEnv::Get().FreshNamespace(client);
  int calls = 0;
  const auto fake_clock_that_throws_twice = [&calls] {
    if (++calls <= 2) throw std::runtime_error("the clock broke");
    return static_cast<double>(std::time(nullptr));
  };
  LeaderElector elector(client,
                        {.namespace_name = ns,
                         .name = "guarded",
                         .identity = "a",
                         .retry_period = std::chrono::seconds(1)},
                        fake_clock_that_throws_twice);
  const auto before = PanicCounts()["leader-election"];
  std::atomic<bool> stop{false};
  EXPECT_TRUE(elector.Acquire(stop));
  EXPECT_EQ(PanicCounts()["leader-election"], before + 2);
  auto lease = client.Get(ObjectPath(kLeases, ns, "guarded"));
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "a");
}

}  // namespace
}  // namespace pipescale::kube
