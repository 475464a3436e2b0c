// The load generator's shapes: each one's length and mean rate are what its numbers say, and
// a malformed one is refused with the reason.
#include "trace/trace.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

namespace pipescale::trace {
namespace {

TEST(Trace, StepsAreTakenAsWritten) {
  const auto t = ParseTrace("8:60,27:90,8:90", 1);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->steps, (std::vector<Step>{{8, 60}, {27, 90}, {8, 90}}));
  EXPECT_DOUBLE_EQ(t->Seconds(), 240);
  EXPECT_DOUBLE_EQ(t->MeanRps(), (8 * 60 + 27 * 90 + 8 * 90) / 240.0);
}

TEST(Trace, Fa2AlternatesEightAndTwentySeven) {
  const auto t = ParseTrace("fa2:100", 1);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->steps, (std::vector<Step>{{8, 30}, {27, 30}, {8, 30}, {27, 10}}));
}

// Normal: the same seed gives the same trace; the mean over many seconds is near MEAN, and
// no rate is negative even when SD is larger than MEAN.
TEST(Trace, NormalIsSeededCenteredAndNeverNegative) {
  const auto a = ParseTrace("normal:50:10:2000", 7);
  const auto b = ParseTrace("normal:50:10:2000", 7);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->steps, b->steps);
  EXPECT_NEAR(a->MeanRps(), 50, 1);
  const auto wide = ParseTrace("normal:5:50:500", 7);
  for (const Step& s : wide->steps) EXPECT_GE(s.rps, 0);
}

// Diurnal: LOW at the start of each period, HIGH half-way; a burst multiplies the rate for 5 s
// every quarter period.
TEST(Trace, DiurnalSpansLowToHighAndBursts) {
  const auto t = ParseTrace("diurnal:10:50:100:200", 1);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->steps.size(), 200u);
  EXPECT_DOUBLE_EQ(t->steps[0].rps, 10);
  EXPECT_DOUBLE_EQ(t->steps[50].rps, 50);
  EXPECT_DOUBLE_EQ(t->steps[100].rps, 10);
  EXPECT_NEAR(t->MeanRps(), 30, 0.5);
  const auto burst = ParseTrace("diurnal:10:50:100:100:3", 1);
  EXPECT_DOUBLE_EQ(burst->steps[0].rps, 30);
  EXPECT_DOUBLE_EQ(burst->steps[26].rps, t->steps[26].rps * 3);
  EXPECT_DOUBLE_EQ(burst->steps[30].rps, t->steps[30].rps);
}

TEST(Trace, CsvOfRatesOrOfArrivals) {
  const auto rates = ParseTrace("csv:r", 1, "# t,rps\n10,5\n0,2\n20,0\n");
  ASSERT_TRUE(rates.ok());
  EXPECT_EQ(rates->steps, (std::vector<Step>{{2, 10}, {5, 10}, {0, 1}}));
  const auto times = ParseTrace("csv:t", 1, "0.5\n0.1\n2\n");
  ASSERT_TRUE(times.ok());
  EXPECT_EQ(times->arrivals, (std::vector<double>{0.1, 0.5, 2}));
  EXPECT_DOUBLE_EQ(times->MeanRps(), 1.5);
}

// A shape replayed at another scale: every rate times the factor, the times as they were; a
// trace of arrival times has no rate to scale.
TEST(Trace, ScalingMultipliesTheRatesOnly) {
  const auto steps = ParseTrace("10:5,0:3,2.5:4", 1);
  ASSERT_TRUE(steps.ok());
  const auto scaled = ScaleTrace(*steps, 10);
  ASSERT_TRUE(scaled.ok());
  EXPECT_EQ(scaled->steps, (std::vector<Step>{{100, 5}, {0, 3}, {25, 4}}));
  EXPECT_DOUBLE_EQ(scaled->Requests(), 10 * steps->Requests());
  EXPECT_FALSE(ScaleTrace(*ParseTrace("csv:t", 1, "0.5\n1\n"), 2).ok());
  EXPECT_TRUE(ScaleTrace(*ParseTrace("csv:t", 1, "0.5\n1\n"), 1).ok());
  for (double bad : {0.0, -1.0, 1001.0}) EXPECT_FALSE(ScaleTrace(*steps, bad).ok()) << bad;
  EXPECT_FALSE(ScaleTrace(*ParseTrace("900000:1", 1), 2).ok()) << "past kMaxRps";
}

TEST(Trace, MalformedShapesSayWhy) {
  for (const char* bad :
       {"", "8", "8:x", "-1:10", "fa2", "normal:1:2", "diurnal:1:2:0:10", "nan:10", "8:10,,9:1"}) {
    const auto t = ParseTrace(bad, 1);
    EXPECT_FALSE(t.ok()) << bad;
    if (!t.ok()) {
      EXPECT_NE(t.error().message.find("--trace"), std::string::npos) << bad;
    }
  }
  EXPECT_FALSE(ParseTrace("csv:f", 1, "1,2\n3\n").ok());  // rates and arrivals mixed
  EXPECT_FALSE(ParseTrace("csv:f", 1, "1,2,3\n").ok());
  EXPECT_FALSE(ParseTrace("csv:f", 1, "# nothing\n").ok());
}

// The public traces kept in bench/traces: each reads as a CSV of rates, sends the requests and
// lasts the seconds its header says it was derived from, and replays at 10x within the limits.
TEST(Trace, PublicTracesReadAsTheirHeadersSay) {
  for (const char* name : {"azure-llm-code.csv", "azure-llm-conv.csv"}) {
    std::ifstream in(std::string(PIPESCALE_SOURCE_DIR) + "/bench/traces/" + name);
    ASSERT_TRUE(in) << name;
    std::stringstream text;
    text << in.rdbuf();
    std::smatch said;
    const std::string body = text.str();
    ASSERT_TRUE(std::regex_search(body, said, std::regex(R"(# (\d+) requests over (\d+) s)")))
        << name << ": the header states its requests and seconds";
    auto trace = ParseTrace(std::string("csv:") + name, 1, body);
    ASSERT_TRUE(trace.ok()) << name << ": " << trace.error().message;
    EXPECT_DOUBLE_EQ(trace->Requests(), std::stod(said[1])) << name;
    EXPECT_DOUBLE_EQ(trace->Seconds(), std::stod(said[2])) << name;
    EXPECT_TRUE(ScaleTrace(*trace, 10).ok()) << name;
  }
}

}  // namespace
}  // namespace pipescale::trace
