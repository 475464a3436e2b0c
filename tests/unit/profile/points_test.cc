#include "profile/points.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/pipeline_parse.h"
#include "profile/job.h"

namespace pipescale::profile {
namespace {

const std::string kMark = std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/mark-classify.yaml";

// Batches measured at d(b) = 0.5 b^2 + 2 b + 8 ms (the mean), p50 1 ms lower, p99 3 ms higher.
std::vector<MeasuredBatch> Measured(int sizes) {
  std::vector<MeasuredBatch> out;
  for (int b = 1; b <= sizes; ++b) {
    const double d = 0.5 * b * b + 2 * b + 8;
    out.push_back(
        {.batch = b, .summary = {.count = 200, .p50_ms = d - 1, .mean_ms = d, .p99_ms = d + 3}});
  }
  return out;
}

TEST(Points, TheStatisticBecomesThePointsAndTheFitFindsTheCurve) {
  auto latency = MakeLatency(Measured(8), Statistic::kMean, FitModel::kQuadratic);
  ASSERT_TRUE(latency.ok()) << latency.error().message;
  ASSERT_EQ(latency->points.size(), 8u);
  EXPECT_EQ(latency->points[0], (model::LatencyPoint{1, 10.5}));
  ASSERT_TRUE(latency->fit.has_value());
  EXPECT_NEAR(latency->fit->coefficients.a, 0.5, 1e-6);
  EXPECT_NEAR(latency->fit->coefficients.b, 2, 1e-6);
  EXPECT_NEAR(latency->fit->coefficients.c, 8, 1e-6);
  EXPECT_NEAR(LatencyMs(*latency, 16), 0.5 * 256 + 32 + 8, 1e-6);
  auto p99 = MakeLatency(Measured(8), Statistic::kP99, FitModel::kQuadratic);
  EXPECT_EQ(p99->points[0].ms, 13.5);
  auto table = MakeLatency(Measured(8), Statistic::kP50, FitModel::kTable);
  EXPECT_FALSE(table->fit.has_value());
  EXPECT_EQ(table->points[1].ms, 13);
}

TEST(Points, BelowThreeSizesATableAsTheParserMakesIt) {
  auto two = MakeLatency(Measured(2), Statistic::kMean, FitModel::kQuadratic);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->model, FitModel::kTable);
  EXPECT_EQ(LatencyText(*two, {}), "{model: table, points: [[1, 10.5], [2, 14]]}");
  EXPECT_FALSE(MakeLatency({}, Statistic::kMean, FitModel::kQuadratic).ok());
}

TEST(Points, WrittenAsTheParserReadsThem) {
  std::vector<MeasuredBatch> m = {{.batch = 1, .summary = {.mean_ms = 10.12345}},
                                  {.batch = 2, .summary = {.mean_ms = 12.0}},
                                  {.batch = 3, .summary = {.mean_ms = 0.0000001}}};
  auto latency = MakeLatency(m, Statistic::kMean, FitModel::kTable);
  // Three decimals; never below the smallest latency a pipeline may hold.
  EXPECT_EQ(LatencyText(*latency, {}),
            "{model: table, points: [[1, 10.123], [2, 12], [3, 0.001]]}");
  EXPECT_EQ(LatencyText(*latency, {.json = true}),
            R"({"model": "table", "points": [[1, 10.123], [2, 12], [3, 0.001]]})");
  EXPECT_EQ(LatencyText(*latency, {.block = true, .column = 4}),
            "model: table\n    points: [[1, 10.123], [2, 12], [3, 0.001]]");
  EXPECT_EQ(MsText(12.5), "12.5");
  EXPECT_EQ(MsText(8), "8");
}

TEST(Points, LongListsWrapUnderTheirFirstPoint) {
  auto latency = MakeLatency(Measured(32), Statistic::kMean, FitModel::kQuadratic);
  const std::string text = LatencyText(*latency, {.column = 20, .width = 100});
  size_t start = 0, lines = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const size_t width = (lines == 0 ? 20 : 0) + end - start;
    EXPECT_LE(width, 100u) << text;
    if (lines > 0) {
      EXPECT_EQ(text.substr(start, 31), std::string(30, ' ') + "[") << text;
    }
    ++lines;
    start = end + 1;
  }
  EXPECT_GT(lines, 3u);
}

TEST(Job, NamesWhatIsUnknownAsTheParserDoes) {
  auto parsed = api::ParsePipelineFile(kMark);
  ASSERT_TRUE(parsed.pipeline) << parsed.errors.front().ToString();
  auto job = ResolveJob(*parsed.pipeline, {"classify", "inception-v3", "p2-xlarge"}, "pow2");
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_EQ(job->max_batch, 16);
  EXPECT_EQ(job->batches, (std::vector<int>{1, 2, 4, 8, 16}));
  EXPECT_TRUE(job->has_profile);
  EXPECT_EQ(job->batch_env, "MAX_BATCH_SIZE");
  EXPECT_EQ(job->deployment_name, "classify-classify-inception-v3-p2-xlarge");
  EXPECT_EQ(
      ResolveJob(*parsed.pipeline, {"clasify", "inception-v3", "p2-xlarge"}, "all").error().message,
      "--task: unknown task \"clasify\"; the pipeline has: classify");
  EXPECT_EQ(ResolveJob(*parsed.pipeline, {"classify", "v4", "p2-xlarge"}, "all").error().message,
            "--variant: unknown variant \"v4\" of task \"classify\"; it has: inception-v3");
  const std::string unknown_class =
      ResolveJob(*parsed.pipeline, {"classify", "inception-v3", "tpu"}, "all").error().message;
  EXPECT_EQ(unknown_class.rfind("--hardware-class: unknown hardware class \"tpu\"; "
                                "spec.hardwareClasses has: c5-large, p2-xlarge",
                                0),
            0u)
      << unknown_class;
  EXPECT_FALSE(ResolveJob(*parsed.pipeline, {"classify", "inception-v3", "p2-xlarge"}, "17").ok());
}

}  // namespace
}  // namespace pipescale::profile
