// The simulator against the box (gym/validate.h): the box's report read or refused by field, and
// a share judged against the noise of one run, which the seeds' spread measures and the box's
// binomial standard error bounds from below.
#include "gym/validate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "support/gym_pipelines.h"
#include "trace/arrivals.h"

namespace pipescale::gym {
namespace {

// A run whose one path "p" sent `sent` requests and answered `within` of them within the SLO
// (every answer a 200).
PolicyReport SimRun(long sent, long within) {
  PolicyReport r;
  r.paths["p"] = {
      .slo_ms = 100, .sent = sent, .answered = within, .within_slo = within, .p99_ms = 90};
  return r;
}

BoxRun Box(long sent, long within) {
  BoxRun box;
  box.paths["p"] = SimRun(sent, within).paths["p"];
  return box;
}

const Agreement& Figure(const std::vector<Agreement>& all, const std::string& name) {
  for (const Agreement& a : all) {
    if (a.figure == name) return a;
  }
  ADD_FAILURE() << "no figure " << name;
  return all.front();
}

TEST(GymValidate, ReadsTheBoxRunAndNamesWhatDoesNotParse) {
  const std::string report =
      R"({"paths": {"p": {"sent": 10, "codes": {"200": 9, "503": 1}, "sloAttainment": 0.8,
          "p50Ms": 40, "p99Ms": 90}}})";
  auto run = ReadBoxRun(report, "seconds,task,ready\n0,a,1\n5,a,2\n");
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->paths.at("p").sent, 10);
  EXPECT_EQ(run->paths.at("p").answered, 9);
  EXPECT_EQ(run->paths.at("p").within_slo, 8);
  ASSERT_EQ(run->replicas.size(), 2u);
  EXPECT_EQ(run->replicas[1].second.at("a"), 2);

  EXPECT_EQ(run->seed, 42u) << "pipescale-loadgen's default, for a report that does not say";

  auto bad = ReadBoxRun(R"({"paths": {"p": {"sent": -1}}})", "seconds,task,ready\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("paths.p.sent"), std::string::npos) << bad.error().message;
}

// The seed of the requests the box's clients sent: the simulation replays them.
TEST(GymValidate, ReadsTheSeedOfTheBoxsRequests) {
  auto run = ReadBoxRun(R"({"paths": {}, "seed": 18446744073709551615})", "seconds,task,ready\n");
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->seed, 18446744073709551615u);
  for (const char* seed : {"-1", "1.5", "\"7\"", "null"}) {
    auto bad = ReadBoxRun(std::string(R"({"paths": {}, "seed": )") + seed + "}", "");
    ASSERT_FALSE(bad.ok()) << seed;
    EXPECT_NE(bad.error().message.find("seed"), std::string::npos) << bad.error().message;
  }
}

// The box's run simulated: its clients' requests (its seed) in every run, each run under another
// draw of the world.
TEST(GymValidate, SimulatesTheRequestsTheBoxsClientsSent) {
  BoxRun box;
  box.seed = 5;
  Options options = testing::With("fixed:1", "20:30", 1);
  auto runs = SimulateBox(testing::Chain({"a"}, 10, 1000), box, "20:30", options, 3);
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  ASSERT_EQ(runs->size(), 3u);
  const trace::Trace trace = *trace::ParseTrace("20:30", 5);
  auto count = [&](std::uint64_t seed) {
    long n = 0;
    trace::ArrivalStream stream(trace, {.path_weights = {1}}, seed);  // the chain's one path
    while (stream.Next()) ++n;
    return n;
  };
  for (const PolicyReport& run : *runs) EXPECT_EQ(run.paths.at("p").sent, count(5));
  EXPECT_NE(count(5), count(1)) << "the options' own seed would have sent other requests";
  EXPECT_FALSE(SimulateBox(testing::Chain({"a"}, 10, 1000), box, "20:x", options, 1).ok());
}

// Seeds that agree exactly leave the box's binomial noise: 90% of 400 requests, 3.0 points.
TEST(GymValidate, SeedsThatAgreeLeaveTheBinomialNoise) {
  const std::vector<PolicyReport> runs(4, SimRun(400, 340));
  const auto all = Compare(Box(400, 360), runs);
  const Agreement& in_slo = Figure(all, "p in SLO (%)");
  EXPECT_NEAR(in_slo.noise, 200 * std::sqrt(0.9 * 0.1 / 400), 1e-9);
  EXPECT_NEAR(in_slo.difference, -5, 1e-9);
  EXPECT_FALSE(in_slo.within);  // 5 points apart, noise 3.0, 10% of the 15% missed is 1.5
}

// Two seeds at 85% and 95% say one run's share moves by 7.1 points (one sd); one run against
// their mean differs by up to 2 sd x sqrt(1 + 1/2) = 17.3 points and still agrees.
TEST(GymValidate, TheSeedsSpreadSetsTheNoiseOfOneRun) {
  const std::vector<PolicyReport> runs = {SimRun(1000, 850), SimRun(1000, 950)};
  const auto near = Compare(Box(1000, 800), runs);
  EXPECT_NEAR(Figure(near, "p in SLO (%)").noise, 200 * std::sqrt(0.005) * std::sqrt(1.5), 1e-6);
  EXPECT_TRUE(Figure(near, "p in SLO (%)").within);
  EXPECT_FALSE(Figure(Compare(Box(1000, 700), runs), "p in SLO (%)").within);
}

// Over generated seeds: the noise is never below the box's binomial two standard errors, and
// never falls as the seeds spread further from their mean.
TEST(GymValidate, NoiseNeverFallsBelowTheBinomialNorAsTheSeedsSpread) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<long> within(650, 850);
  for (int instance = 0; instance < 200; ++instance) {
    const long mid = 750;
    std::vector<PolicyReport> runs, wider;
    for (int s = 0; s < 2 + instance % 6; ++s) {
      const long w = within(rng);
      runs.push_back(SimRun(1000, w));
      wider.push_back(SimRun(1000, mid + 2 * (w - mid)));
    }
    const BoxRun box = Box(1000, within(rng));
    const double share = static_cast<double>(box.paths.at("p").within_slo) / 1000;
    const double binomial = 200 * std::sqrt(share * (1 - share) / 1000);
    const double noise = Figure(Compare(box, runs), "p in SLO (%)").noise;
    EXPECT_GE(noise, binomial - 1e-9) << instance;
    EXPECT_GE(Figure(Compare(box, wider), "p in SLO (%)").noise, noise - 1e-9) << instance;
  }
}

}  // namespace
}  // namespace pipescale::gym
