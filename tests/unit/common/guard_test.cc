// The last-resort guards: a throw is counted by component, logged once per message, and the
// guarded loop runs again after a backoff until it returns or is stopped.
#include "common/guard.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace pipescale {
namespace {

std::uint64_t Count(const std::string& component) {
  const auto counts = PanicCounts();
  const auto it = counts.find(component);
  return it == counts.end() ? 0 : it->second;
}

size_t Occurrences(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(Guard, CountsEveryThrowAndLogsEachMessageOnce) {
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(Guard("guard-test", [] { throw std::runtime_error("odd object"); }));
  }
  EXPECT_FALSE(Guard("guard-test", [] { throw 42; }));
  EXPECT_TRUE(Guard("guard-test", [] {}));
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(Count("guard-test"), 4U);
  EXPECT_EQ(Occurrences(log, "odd object"), 1U) << log;
  EXPECT_EQ(Occurrences(log, "not derived from std::exception"), 1U) << log;
  EXPECT_EQ(Occurrences(log, "component=guard-test"), 2U) << log;
}

TEST(RunWithRestarts, RunsTheLoopAgainAfterEachThrowUntilItReturns) {
  std::atomic<bool> stop{false};
  int runs = 0;
  const auto start = std::chrono::steady_clock::now();
  RunWithRestarts("restart-test", stop,
                  [&] {
                    if (++runs < 4) throw std::logic_error("loop broke");
                  },
                  {.min = std::chrono::milliseconds(20), .max = std::chrono::milliseconds(40)});
  EXPECT_EQ(runs, 4);
  EXPECT_EQ(Count("restart-test"), 3U);
  // Backed off between the runs: 20 + 40 + 40 ms at least.
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
}

TEST(RunWithRestarts, StopsRestartingWhenStopped) {
  std::atomic<bool> stop{false};
  int runs = 0;
  RunWithRestarts("stop-test", stop, [&] {
    ++runs;
    stop = true;
    throw std::runtime_error("broke while stopping");
  });
  EXPECT_EQ(runs, 1);
}

}  // namespace
}  // namespace pipescale
