// Learning profiles from the router's batch times: which measurements count, the corrected
// profile the optimizers plan from, and when planning moves to a new measurement.
#include "reconciler/profiles.h"

#include <gtest/gtest.h>

#include <random>

#include "optimizer/registry.h"
#include "support/instance_generator.h"

namespace pipescale::reconciler {
namespace {

using model::ProfileLearning;

const model::ProfileKey kKey{"detect", "small", "cpu"};

// detect/small on cpu declared d(b) = 10 b + 20 ms, batches up to 16, with a router.
model::Pipeline Pipeline(ProfileLearning learn) {
  model::Pipeline p;
  p.name = "shop";
  model::Variant v{.name = "small", .max_batch = 16};
  v.profiles.push_back(
      {.hardware_class = "cpu", .latency = {.quadratic = {.a = 0, .b = 10, .c = 20}}});
  p.spec.hardware_classes.push_back({.name = "cpu"});
  p.spec.tasks.push_back({.name = "detect", .next = {}, .variants = {v}});
  p.spec.router = model::RouterSpec{};
  p.spec.profiles.learn = learn;
  return p;
}

// Batches of the given sizes, each measured at `scale` times the declared 10 b + 20.
model::BatchTimings Measured(const std::vector<int>& sizes, double scale, double batches = 100) {
  model::BatchTimings out;
  for (int b : sizes) out[kKey][b] = {.batches = batches, .mean_ms = scale * (10.0 * b + 20)};
  return out;
}

TEST(Profiles, OnlySizesWithEnoughBatchesCount) {
  const model::Pipeline p = Pipeline(ProfileLearning::kReport);
  model::BatchTimings t = Measured({4}, 1.5);
  t[kKey][8] = {.batches = p.spec.profiles.min_batches - 1.0, .mean_ms = 1000};
  const ProfileStep step = StepProfiles(p, {}, t);
  ASSERT_EQ(step.observed.size(), 1u);
  ASSERT_EQ(step.observed[0].points.size(), 1u);
  EXPECT_EQ(step.observed[0].points[0].batch, 4);
  EXPECT_DOUBLE_EQ(step.observed[0].points[0].declared_ms, 60);
  EXPECT_NEAR(*step.observed[0].ratio, 1.5, 1e-12);
  // Nothing trusted: nothing to report, and no verdict either way.
  t.erase(kKey);
  t[kKey][8] = {.batches = 1, .mean_ms = 1000};
  EXPECT_TRUE(StepProfiles(p, {}, t).observed.empty());
  EXPECT_FALSE(JudgeProfiles(p, StepProfiles(p, {}, t)).known);
}

// The ratio is the time the measured batches took over the time the declared profile gives
// them: each size weighs by its batches and its length.
TEST(Profiles, TheRatioWeighsEachSizeByTheTimeItsBatchesTook) {
  const model::Pipeline p = Pipeline(ProfileLearning::kReport);
  model::BatchTimings t;
  t[kKey][1] = {.batches = 300, .mean_ms = 30 * 2.0};   // 2x at b=1 (declared 30)
  t[kKey][8] = {.batches = 100, .mean_ms = 100 * 1.0};  // 1x at b=8 (declared 100)
  const double want = (300 * 60.0 + 100 * 100.0) / (300 * 30.0 + 100 * 100.0);
  EXPECT_NEAR(*StepProfiles(p, {}, t).observed[0].ratio, want, 1e-12);
}

TEST(Profiles, SeriesOfVariantsOrClassesTheSpecDoesNotListAreIgnored) {
  const model::Pipeline p = Pipeline(ProfileLearning::kPlan);
  model::BatchTimings t;
  t[{"detect", "gone", "cpu"}][4] = {.batches = 100, .mean_ms = 99};
  t[{"detect", "small", "gpu"}][4] = {.batches = 100, .mean_ms = 99};
  t[{"nope", "small", "cpu"}][4] = {.batches = 100, .mean_ms = 99};
  const ProfileStep step = StepProfiles(p, {}, t);
  EXPECT_TRUE(step.observed.empty());
  EXPECT_TRUE(step.corrections.empty());
}

TEST(Profiles, DriftIsJudgedAgainstTheTolerance) {
  model::Pipeline p = Pipeline(ProfileLearning::kReport);
  p.spec.profiles.tolerance = 0.2;
  EXPECT_TRUE(JudgeProfiles(p, StepProfiles(p, {}, Measured({4}, 1.19))).accurate);
  const ProfileStep slow = StepProfiles(p, {}, Measured({4}, 1.3));
  const ProfileVerdict v = JudgeProfiles(p, slow);
  EXPECT_TRUE(v.known);
  EXPECT_FALSE(v.accurate);
  EXPECT_EQ(slow.drifted, std::vector<model::ProfileKey>{kKey});
  EXPECT_NE(v.message.find("detect/small on cpu runs 1.30x"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("learn: Plan would"), std::string::npos) << v.message;
  EXPECT_FALSE(JudgeProfiles(p, StepProfiles(p, {}, Measured({4}, 0.7))).accurate);
}

TEST(Profiles, ReportAndOffNeverCorrectThePlan) {
  for (ProfileLearning learn : {ProfileLearning::kOff, ProfileLearning::kReport}) {
    const model::Pipeline p = Pipeline(learn);
    const model::ProfileCorrection before{
        .key = kKey,
        .ratio = 1.3,
        .points = {},
        .declared = ProfileFingerprint(p.spec.tasks[0].variants[0].profiles[0].latency)};
    const ProfileStep step = StepProfiles(p, {before}, Measured({4}, 1.3));
    EXPECT_TRUE(step.corrections.empty());
    EXPECT_EQ(step.observed.empty(), learn == ProfileLearning::kOff);
  }
}

// Planning moves once the measurement is kProfileShift from what it plans from, and not for
// noise within it.
TEST(Profiles, PlanningMovesOnAShiftNotOnNoise) {
  const model::Pipeline p = Pipeline(ProfileLearning::kPlan);
  EXPECT_TRUE(StepProfiles(p, {}, Measured({4}, 1.04)).corrections.empty());
  const ProfileStep first = StepProfiles(p, {}, Measured({4}, 1.3));
  ASSERT_EQ(first.corrections.size(), 1u);
  EXPECT_NEAR(first.corrections[0].ratio, 1.3, 1e-12);
  EXPECT_NEAR(first.observed[0].planned_ratio, 1.3, 1e-12);
  const ProfileStep noise = StepProfiles(p, first.corrections, Measured({4}, 1.3 * 1.04));
  EXPECT_EQ(noise.corrections, first.corrections);
  const ProfileStep shifted = StepProfiles(p, first.corrections, Measured({4}, 1.3 * 1.06));
  EXPECT_NEAR(shifted.corrections[0].ratio, 1.3 * 1.06, 1e-12);
  // Back to the declared profile: a correction of 1 with the measured points.
  const ProfileStep back = StepProfiles(p, shifted.corrections, Measured({4}, 1.0));
  ASSERT_EQ(back.corrections.size(), 1u);
  EXPECT_NEAR(back.corrections[0].ratio, 1, 1e-12);
}

TEST(Profiles, WhatWasLearnedStaysWithoutLoadAndGoesWithANewDeclaredProfile) {
  model::Pipeline p = Pipeline(ProfileLearning::kPlan);
  const ProfileStep learned = StepProfiles(p, {}, Measured({4}, 1.3));
  EXPECT_EQ(StepProfiles(p, learned.corrections, {}).corrections, learned.corrections);
  p.spec.tasks[0].variants[0].profiles[0].latency.quadratic.c = 26;  // someone re-profiled
  EXPECT_TRUE(StepProfiles(p, learned.corrections, {}).corrections.empty());
  p.spec.profiles.learn = ProfileLearning::kReport;
  EXPECT_TRUE(StepProfiles(Pipeline(ProfileLearning::kReport), learned.corrections, {})
                  .corrections.empty());
}

TEST(Profiles, TheCorrectedProfileIsMeasuredWhereMeasuredAndScaledElsewhere) {
  const model::LatencyProfile declared{.quadratic = {.a = 0, .b = 10, .c = 20}};
  const model::ProfileCorrection c{
      .key = kKey, .ratio = 1.5, .points = {{4, 95}, {8, 140}}, .declared = ""};
  const model::LatencyProfile corrected = Corrected(declared, c, 16);
  EXPECT_EQ(corrected.MaxBatch(16), 16);
  EXPECT_DOUBLE_EQ(corrected.Ms(4), 95);
  EXPECT_DOUBLE_EQ(corrected.Ms(8), 140);
  EXPECT_DOUBLE_EQ(corrected.Ms(1), 1.5 * 30);
  EXPECT_DOUBLE_EQ(corrected.Ms(16), 1.5 * 180);
  // b = 9 scaled is 165 > 140: the larger batch is not made cheaper than the measured b = 8...
  EXPECT_DOUBLE_EQ(corrected.Ms(9), 165);
  // ...and b = 5 scaled (105) sits above the measured b = 4 (95), as it should.
  EXPECT_DOUBLE_EQ(corrected.Ms(5), 105);
}

// Property: a corrected profile never falls as the batch grows, whatever was measured.
TEST(Profiles, ACorrectedProfileNeverFallsAsTheBatchGrows) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 500; ++i) {
    const model::LatencyProfile declared{
        .quadratic = {.a = u(rng), .b = 20 * u(rng), .c = 50 * u(rng) + 1}};
    model::ProfileCorrection c{
        .key = kKey, .ratio = 0.3 + 2 * u(rng), .points = {}, .declared = ""};
    for (int b = 1; b <= 32; ++b) {
      if (u(rng) < 0.2) c.points.push_back({b, 400 * u(rng) + 0.1});
    }
    const model::LatencyProfile corrected = Corrected(declared, c, 32);
    for (int b = 2; b <= 32; ++b) {
      ASSERT_GE(corrected.Ms(b), corrected.Ms(b - 1) - 1e-9) << i << " " << b;
    }
    for (const model::LatencyPoint& p : c.points) ASSERT_GE(corrected.Ms(p.batch), p.ms - 1e-9);
  }
}

// Property: when every variant runs `scale` times its declared profile and the router measured
// some of its batch sizes, planning from the corrected profiles costs what planning from the true
// profiles does, on generated FA2 instances (the corrected profile is the true one at every size).
TEST(Profiles, ACorrectedProfilePlansLikeTheTrueOne) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  for (const testing::Instance& instance : testing::GenerateSuite(60, 5)) {
    model::Pipeline declared = instance.pipeline;
    declared.spec.router = model::RouterSpec{};
    declared.spec.profiles.learn = ProfileLearning::kPlan;
    // Off by more than kProfileShift, one way or the other.
    const double scale = u(rng) < 0.5 ? 0.6 + 0.3 * u(rng) : 1.1 + 0.3 * u(rng);
    model::Pipeline truth = declared;
    model::BatchTimings timings;
    for (model::Task& task : truth.spec.tasks) {
      for (model::Variant& v : task.variants) {
        for (model::Profile& p : v.profiles) {
          const model::LatencyProfile was = p.latency;
          p.latency.quadratic = {scale * was.quadratic.a, scale * was.quadratic.b,
                                 scale * was.quadratic.c};
          const int measured = 1 + static_cast<int>(u(rng) * v.max_batch);
          timings[{task.name, v.name, p.hardware_class}][std::min(measured, v.max_batch)] = {
              .batches = 100, .mean_ms = p.latency.Ms(std::min(measured, v.max_batch))};
        }
      }
    }
    model::Pipeline corrected = declared;
    UseCorrections(corrected, StepProfiles(declared, {}, timings).corrections);
    const model::Plan want = optimizer::Solve(truth, instance.workload, "fa2");
    const model::Plan got = optimizer::Solve(corrected, instance.workload, "fa2");
    ASSERT_EQ(got.TotalReplicas(), want.TotalReplicas()) << instance.label << " scale " << scale;
    ASSERT_NEAR(got.cost_per_hour, want.cost_per_hour, 1e-9) << instance.label;
  }
}

}  // namespace
}  // namespace pipescale::reconciler
