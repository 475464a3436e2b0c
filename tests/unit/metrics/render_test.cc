#include <gtest/gtest.h>

#include "metrics/source.h"

namespace pipescale::metrics {
namespace {

TEST(Render, SubstitutesEveryPlaceholder) {
  EXPECT_EQ(Render(R"(x{p="{{pipeline}}",q="{{pipeline}}",path="{{path}}"})",
                   {{"pipeline", "traffic"}, {"path", "car"}}),
            R"(x{p="traffic",q="traffic",path="car"})");
  EXPECT_EQ(Render("{{unknown}}", {{"pipeline", "x"}}), "{{unknown}}");
}

TEST(DefaultQueries, CoverWhatTheSnapshotReads) {
  for (const char* name : {"pathRate", "pathLatency", "arrivalRate"}) {
    EXPECT_TRUE(DefaultQueries().contains(name)) << name;
  }
  EXPECT_NE(DefaultQueries().at("pathRate").find("{{path}}"), std::string::npos);
}

}  // namespace
}  // namespace pipescale::metrics
