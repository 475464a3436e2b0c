// What an answered call says of d(b) on its pod's class: the rules by which the router's batch
// service series are fed (the handler applying them to real calls: tests/unit/router).
#include "routing/batch_sample.h"

#include <gtest/gtest.h>

namespace pipescale::routing {
namespace {

using nlohmann::json;

CallFacts Facts(int rows, bool pod_batches, bool pod_was_idle, const std::string& klass = "cpu") {
  return {.hardware_class = klass,
          .rows = rows,
          .pod_batches = pod_batches,
          .pod_was_idle = pod_was_idle};
}

TEST(BatchServiceSample, TheServersRowsAndQueueTimeMakeTheSample) {
  const json parameters = {{"pipescale_queue_ms", 30}, {"pipescale_batch_rows", 12}};
  for (const bool batches : {false, true}) {
    for (const bool idle : {false, true}) {
      const auto sample = BatchServiceSample(Facts(2, batches, idle), 0.050, parameters);
      ASSERT_TRUE(sample);
      EXPECT_EQ(sample->rows, 12);
      EXPECT_NEAR(sample->seconds, 0.020, 1e-12);
    }
  }
}

TEST(BatchServiceSample, APodThatDoesNotBatchIsMeasuredByTheRowsSent) {
  const auto sample =
      BatchServiceSample(Facts(3, false, false), 0.05, {{"pipescale_queue_ms", 10}});
  ASSERT_TRUE(sample);
  EXPECT_EQ(sample->rows, 3);
  EXPECT_NEAR(sample->seconds, 0.04, 1e-12);
  // Rows that no batch can have are not the server's word: the rows sent stand.
  for (const json& odd : {json(0), json(-4), json(2.5), json("8"), json(nullptr)}) {
    const auto s = BatchServiceSample(Facts(3, false, false), 0.05,
                                      {{"pipescale_queue_ms", 10}, {"pipescale_batch_rows", odd}});
    ASSERT_TRUE(s) << odd;
    EXPECT_EQ(s->rows, 3) << odd;
  }
}

TEST(BatchServiceSample, AServerBatchOfUnknownSizeSaysNothing) {
  EXPECT_FALSE(BatchServiceSample(Facts(1, true, true), 0.05, {{"pipescale_queue_ms", 10}}));
  EXPECT_FALSE(BatchServiceSample(Facts(1, true, true), 0.05,
                                  {{"pipescale_queue_ms", 10}, {"pipescale_batch_rows", 1.5}}));
}

TEST(BatchServiceSample, WithoutAQueueTimeOnlyACallThatCannotHaveQueuedIsAllService) {
  const auto idle = BatchServiceSample(Facts(4, false, true), 0.05, json::object());
  ASSERT_TRUE(idle);
  EXPECT_EQ(idle->rows, 4);
  EXPECT_EQ(idle->seconds, 0.05);
  EXPECT_FALSE(BatchServiceSample(Facts(4, false, false), 0.05, json::object()));  // busy
  // A batching pod with its rows reported but no queue: the batch may have waited to fill.
  EXPECT_FALSE(BatchServiceSample(Facts(4, true, true), 0.05, {{"pipescale_batch_rows", 4}}));
  // A queue time that is not one counts as none.
  for (const json& odd : {json(-1), json("5"), json(nullptr)}) {
    EXPECT_FALSE(BatchServiceSample(Facts(4, false, false), 0.05, {{"pipescale_queue_ms", odd}}))
        << odd;
    EXPECT_TRUE(BatchServiceSample(Facts(4, false, true), 0.05, {{"pipescale_queue_ms", odd}}))
        << odd;
  }
}

TEST(BatchServiceSample, NoClassOrAnAbsurdBatchOrQueueMakesNoSample) {
  const json fine = {{"pipescale_queue_ms", 10}, {"pipescale_batch_rows", 8}};
  EXPECT_FALSE(BatchServiceSample(Facts(8, false, true, ""), 0.05, fine));
  // A hostile answer cannot mint a series per number: past kMaxBatchRows nothing is recorded.
  EXPECT_TRUE(BatchServiceSample(Facts(1, false, true), 0.05,
                                 {{"pipescale_queue_ms", 10}, {"pipescale_batch_rows", 4096}}));
  for (const json& rows : {json(4097), json(1L << 40)}) {
    EXPECT_FALSE(BatchServiceSample(Facts(1, false, true), 0.05,
                                    {{"pipescale_queue_ms", 10}, {"pipescale_batch_rows", rows}}))
        << rows;
  }
  EXPECT_FALSE(BatchServiceSample(Facts(5000, false, true), 0.05, {{"pipescale_queue_ms", 10}}));
  // The queue lies within the call: a longer one is a broken clock, not a batch of no time.
  EXPECT_FALSE(BatchServiceSample(Facts(8, false, true), 0.05, {{"pipescale_queue_ms", 60}}));
}

}  // namespace
}  // namespace pipescale::routing
