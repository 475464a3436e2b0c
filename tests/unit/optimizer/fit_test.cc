#include "optimizer/fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace pipescale::optimizer {
namespace {

std::vector<model::LatencyPoint> Sample(double a, double b, double c) {
  std::vector<model::LatencyPoint> points;
  for (int x : {1, 2, 4, 8, 12, 16, 24, 32}) points.push_back({x, a * x * x + b * x + c});
  return points;
}

TEST(FitQuadratic, RecoversExactCoefficients) {
  const auto fit = FitQuadratic(Sample(0.05, 3.1, 8.0));
  ASSERT_TRUE(fit.ok());
  EXPECT_NEAR(fit->coefficients.a, 0.05, 1e-9);
  EXPECT_NEAR(fit->coefficients.b, 3.1, 1e-7);
  EXPECT_NEAR(fit->coefficients.c, 8.0, 1e-6);
  EXPECT_LT(fit->quality.rmse_ms, 1e-6);
  EXPECT_EQ(fit->quality.outliers, 0);
}

TEST(FitQuadratic, OutlierBarelyMovesTheRobustFit) {
  auto points = Sample(0.05, 3.1, 8.0);
  // Small measurement noise everywhere, and one straggler at b = 12 (3x its latency).
  for (size_t i = 0; i < points.size(); ++i) points[i].ms += (i % 2 ? 0.3 : -0.3);
  points[4].ms *= 3;
  const auto fit = FitQuadratic(points);
  ASSERT_TRUE(fit.ok());
  // Plain least squares would be pulled by ~40 ms at b = 12; Huber stays near the truth.
  const double truth16 = 0.05 * 256 + 3.1 * 16 + 8;
  const double fitted16 =
      fit->coefficients.a * 256 + fit->coefficients.b * 16 + fit->coefficients.c;
  EXPECT_NEAR(fitted16, truth16, 2.0);
  EXPECT_GE(fit->quality.outliers, 1);
  EXPECT_GT(fit->quality.max_error_ms, 50);  // the straggler's residual is reported
}

TEST(FitQuadratic, NeedsThreeDistinctBatchSizes) {
  const std::vector<model::LatencyPoint> points = {{1, 10}, {1, 11}, {4, 20}};
  const auto fit = FitQuadratic(points);
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.error().kind, ErrorKind::kInvalid);
  EXPECT_NE(fit.error().message.find("3 or more distinct batch sizes"), std::string::npos);
}

}  // namespace
}  // namespace pipescale::optimizer
