// The metrics source against a real Prometheus scraping counters this test exports at known
// rates (through file service discovery, as the local model servers are).
#include "metrics/source.h"

#include <gtest/gtest.h>

#include <thread>

#include "integration/harness/load.h"
#include "integration/harness/local_env.h"

namespace pipescale::metrics {
namespace {

using testing::LocalEnv;
using namespace std::chrono_literals;

model::Pipeline ThreePaths(const std::string& name) {
  model::Pipeline p;
  p.name = name;
  p.namespace_name = "metrics-test";
  p.spec.paths = {{.name = "fast"}, {.name = "slow"}, {.name = "silent"}};
  return p;
}

TEST(MetricsSource, ReadsRatesAndReportsMissingSeries) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  model::Pipeline pipeline = ThreePaths("rates");
  // Per-pipeline overrides with a 5 s window: the default 30 s window underestimates a fresh
  // series until 30 s of samples exist, which would make this test slow.
  pipeline.spec.metrics.queries["pathRate"] = testing::kFastRateQuery;
  pipeline.spec.metrics.queries["arrivalRate"] =
      R"(sum(rate(pipescale_requests_total{pipeline="{{pipeline}}"}[5s])))";
  testing::Load load(pipeline.namespace_name, pipeline.name, {{"fast", 20}, {"slow", 5}});
  const PrometheusClient prometheus(LocalEnv::Get().Var("PIPESCALE_PROMETHEUS"));

  // Prometheus picks the target up within ~5 s; the 5 s window then fills.
  Result<model::MetricsSnapshot> snapshot = Error{};
  const auto deadline = std::chrono::steady_clock::now() + 40s;
  do {
    std::this_thread::sleep_for(500ms);
    snapshot = ReadSnapshot(prometheus, pipeline);
    ASSERT_TRUE(snapshot.ok()) << snapshot.error().message;
  } while ((snapshot->path_rates_rps.size() < 2 || snapshot->path_rates_rps.at("fast") < 15) &&
           std::chrono::steady_clock::now() < deadline);

  EXPECT_NEAR(snapshot->path_rates_rps.at("fast"), 20, 6);
  EXPECT_NEAR(snapshot->path_rates_rps.at("slow"), 5, 1.5);
  EXPECT_FALSE(snapshot->path_rates_rps.contains("silent"));  // missing, not 0
  EXPECT_EQ(snapshot->missing, std::vector<std::string>{"pathRate{path=\"silent\"}"});
  ASSERT_TRUE(snapshot->arrival_rate_rps.has_value());
  EXPECT_NEAR(*snapshot->arrival_rate_rps, 25, 7.5);
}

TEST(MetricsSource, NamesABadOverride) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  model::Pipeline pipeline = ThreePaths("bad-override");
  pipeline.spec.metrics.queries["pathRate"] = "sum(rate(x[1m]";
  auto snapshot =
      ReadSnapshot(PrometheusClient(LocalEnv::Get().Var("PIPESCALE_PROMETHEUS")), pipeline);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().kind, ErrorKind::kInvalid);
  EXPECT_EQ(snapshot.error().message.rfind("metrics.pathRate: prometheus: bad_data", 0), 0u)
      << snapshot.error().message;
}

TEST(MetricsSource, UnreachablePrometheusIsTransient) {
  const PrometheusClient prometheus("http://127.0.0.1:9", 500ms);  // discard port: refused
  auto snapshot = ReadSnapshot(prometheus, ThreePaths("down"));
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.error().kind, ErrorKind::kTransient);
}

TEST(PrometheusClient, ScalarsAndRanges) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const PrometheusClient prometheus(LocalEnv::Get().Var("PIPESCALE_PROMETHEUS"));
  auto scalar = prometheus.Query("1 + 2");
  ASSERT_TRUE(scalar.ok()) << scalar.error().message;
  ASSERT_EQ(scalar->size(), 1u);
  EXPECT_EQ(scalar->front().value, 3);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto range = prometheus.QueryRange("vector(7)", now - 10, now, 5);
  ASSERT_TRUE(range.ok()) << range.error().message;
  ASSERT_EQ(range->size(), 1u);
  EXPECT_EQ(range->front().points.size(), 3u);
  EXPECT_EQ(range->front().points.back().second, 7);
}

}  // namespace
}  // namespace pipescale::metrics
