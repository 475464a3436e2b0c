// The controller's last-resort guard: a reconcile that throws is a bug, but it must cost one
// key a retry with backoff, never the worker thread or the process.
#include "controller/controller.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "integration/harness/wait.h"

namespace pipescale::controller {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::Eventually;

// The value of the counter `name` with label `label`=`value`; -1 when there is none.
double CounterValue(prometheus::Registry& registry, const std::string& name,
                    const std::string& label, const std::string& value) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& metric : family.metric) {
      for (const auto& l : metric.label) {
        if (l.name == label && l.value == value) return metric.counter.value;
      }
    }
  }
  return -1;
}

TEST(Controller, AReconcileThatThrowsIsRetriedWithBackoffAndOthersCarryOn) {
  prometheus::Registry registry;
  std::mutex mu;
  std::vector<Clock::time_point> bad_calls;
  std::atomic<int> good_calls{0};
  // One worker: if the exception ended it, nothing else would ever be reconciled.
  Controller c(
      "test",
      [&](const std::string& key) -> Controller::Outcome {
        if (key == "ns/good") {
          ++good_calls;
          return std::optional<std::chrono::milliseconds>{};
        }
        {
          std::lock_guard lock(mu);
          bad_calls.push_back(Clock::now());
          if (bad_calls.size() == 2) throw 42;  // not even a std::exception
        }
        throw std::runtime_error("boom");
      },
      registry, 1);
  c.Start();
  c.Enqueue("ns/bad");
  c.Enqueue("ns/good");
  const auto retried = [&] {
    std::lock_guard lock(mu);
    return bad_calls.size() >= 2;
  };
  EXPECT_TRUE(Eventually(retried, 10s, 10ms));  // the first backoff step is 1 s
  c.Enqueue("ns/good");  // the worker still takes new work after two exceptions
  EXPECT_TRUE(Eventually([&] { return good_calls >= 2; }, 10s, 1ms));
  c.Stop();

  std::lock_guard lock(mu);
  ASSERT_GE(bad_calls.size(), 2u);
  EXPECT_GE(bad_calls[1] - bad_calls[0], 900ms);  // the first backoff step is 1 s
  EXPECT_EQ(good_calls, 2);
  EXPECT_GE(CounterValue(registry, "pipescale_reconcile_panics_total", "controller", "test"), 2);
  EXPECT_GE(
      CounterValue(registry, "controller_runtime_reconcile_errors_total", "controller", "test"), 2);
  EXPECT_GE(CounterValue(registry, "workqueue_retries_total", "name", "test"), 2);
}

}  // namespace
}  // namespace pipescale::controller
