// The metrics source against a real Prometheus scraping counters this test exports at known
// rates (through file service discovery, as the local model servers are).
#include "metrics/source.h"

#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/summary.h>

#include <cmath>
#include <memory>
#include <thread>
#include <tuple>

#include "integration/harness/load.h"
#include "integration/harness/local_env.h"
#include "integration/harness/wait.h"

namespace pipescale::metrics {
namespace {

using testing::Eventually;
using testing::LocalEnv;
using namespace std::chrono_literals;

model::Pipeline ThreePaths(const std::string& name) {
  model::Pipeline p;
  p.name = name;
  p.namespace_name = "metrics-test";
  p.spec.paths = {{.name = "fast"}, {.name = "slow"}, {.name = "silent"}};
  return p;
}

// One exporter per pipeline, its path "fast" at the given rate.
std::vector<std::unique_ptr<testing::Load>> FastPathLoads(
    const std::vector<std::pair<std::string, double>>& rates) {
  std::vector<std::unique_ptr<testing::Load>> loads;
  for (const auto& [name, rps] : rates) {
    loads.push_back(std::make_unique<testing::Load>("metrics-test", name,
                                                    std::map<std::string, double>{{"fast", rps}}));
  }
  return loads;
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
  EXPECT_TRUE(Eventually(
      [&] {
        snapshot = ReadSnapshot(prometheus, pipeline);
        return snapshot.ok() && snapshot->path_rates_rps.size() >= 2 &&
               snapshot->path_rates_rps.contains("fast") &&
               snapshot->path_rates_rps.at("fast") >= 15;
      },
      40s, 500ms));
  ASSERT_TRUE(snapshot.ok()) << snapshot.error().message;
  ASSERT_TRUE(snapshot->path_rates_rps.contains("fast") &&
              snapshot->path_rates_rps.contains("slow"));
  EXPECT_NEAR(snapshot->path_rates_rps.at("fast"), 20, 6);
  EXPECT_NEAR(snapshot->path_rates_rps.at("slow"), 5, 1.5);
  EXPECT_FALSE(snapshot->path_rates_rps.contains("silent"));  // missing, not 0
  EXPECT_EQ(snapshot->missing, std::vector<std::string>{"pathRate{path=\"silent\"}"});
  ASSERT_TRUE(snapshot->arrival_rate_rps.has_value());
  EXPECT_NEAR(*snapshot->arrival_rate_rps, 25, 7.5);
}

// The router's batch times, as pipescale-router exports them (a Summary without quantiles),
// read back as each profile's mean service time per batch size over spec.profiles.window.
TEST(MetricsSource, ReadsTheRoutersBatchTimesPerProfileAndBatchSize) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  model::Pipeline pipeline = ThreePaths("batches");
  pipeline.spec.router = model::RouterSpec{};
  pipeline.spec.profiles.window_seconds = 30;
  testing::Load load(pipeline.namespace_name, pipeline.name, {{"fast", 5}});
  auto& family = prometheus::BuildSummary()
                     .Name("pipescale_router_batch_service_seconds")
                     .Help("test")
                     .Register(load.registry());
  const auto series = [&](const char* rows) -> prometheus::Summary& {
    return family.Add({{"namespace", pipeline.namespace_name},
                       {"pipeline", pipeline.name},
                       {"task", "detect"},
                       {"variant", "small"},
                       {"hardware_class", "cpu"},
                       {"rows", rows}},
                      prometheus::Summary::Quantiles{});
  };
  prometheus::Summary &four = series("4"), &one = series("1"), &odd = series("four");
  const PrometheusClient prometheus(LocalEnv::Get().Var("PIPESCALE_PROMETHEUS"));
  model::BatchTimings timings;
  // Batches keep coming while Prometheus scrapes (every poll adds ten of each): increase() needs
  // them between two scrapes.
  EXPECT_TRUE(Eventually(
      [&] {
        for (int i = 0; i < 10; ++i) {
          four.Observe(0.078);
          one.Observe(0.05);
          odd.Observe(9);
        }
        auto snapshot = ReadSnapshot(prometheus, pipeline);
        EXPECT_TRUE(snapshot.ok()) << snapshot.error().message;
        if (snapshot.ok()) timings = snapshot->batch_timings;
        return timings.contains({"detect", "small", "cpu"}) &&
               timings.at({"detect", "small", "cpu"}).size() >= 2;
      },
      40s, 500ms));
  ASSERT_EQ(timings.size(), 1u);
  const auto& by_rows = timings.at({"detect", "small", "cpu"});
  ASSERT_EQ(by_rows.size(), 2u);  // rows="four" is no batch size
  // Within 0.5%: Prometheus extrapolates each series' increase to the window's edges on its own.
  EXPECT_NEAR(by_rows.at(4).mean_ms, 78, 0.39);
  EXPECT_NEAR(by_rows.at(1).mean_ms, 50, 0.25);
  EXPECT_GT(by_rows.at(4).batches, 0);

  pipeline.spec.profiles.learn = model::ProfileLearning::kOff;
  auto off = ReadSnapshot(prometheus, pipeline);
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_TRUE(off->batch_timings.empty());
}

// HPA's utilisation as the model servers export it: busy seconds and readiness per pod, read as
// busy seconds per Ready pod-second of each (task, class). Two Ready pods busy 60% and 20% of
// the time and one starting (not Ready, idle): 40%, not 27%. Read only for hpa, which uses it.
TEST(MetricsSource, ReadsTheBusyShareOfTheReadyPodsForHpa) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  model::Pipeline pipeline = ThreePaths("busy");
  pipeline.spec.optimizer = "hpa";
  testing::Load load(pipeline.namespace_name, pipeline.name, {{"fast", 5}});
  auto& busy = prometheus::BuildCounter()
                   .Name("pipescale_model_busy_seconds_total")
                   .Help("test")
                   .Register(load.registry());
  auto& ready =
      prometheus::BuildGauge().Name("pipescale_model_ready").Help("test").Register(load.registry());
  struct Pod {
    prometheus::Counter* busy;
    double share;
  };
  std::vector<Pod> pods;
  for (const auto& [name, share, is_ready] :
       {std::tuple{"a", 0.6, 1.0}, std::tuple{"b", 0.2, 1.0}, std::tuple{"c", 0.0, 0.0}}) {
    const std::map<std::string, std::string> labels = {{"namespace", pipeline.namespace_name},
                                                       {"pipeline", pipeline.name},
                                                       {"task", "detect"},
                                                       {"hardware_class", "gpu"},
                                                       {"pod", name}};
    pods.push_back({&busy.Add(labels), share});
    ready.Add(labels).Set(is_ready);
  }
  const PrometheusClient prometheus(LocalEnv::Get().Var("PIPESCALE_PROMETHEUS"));
  auto last = std::chrono::steady_clock::now();
  std::map<std::string, double> utilization;
  // The counters grow while Prometheus scrapes (each poll adds the time since the last).
  EXPECT_TRUE(Eventually(
      [&] {
        const auto now = std::chrono::steady_clock::now();
        for (Pod& pod : pods) {
          pod.busy->Increment(pod.share * std::chrono::duration<double>(now - last).count());
        }
        last = now;
        auto snapshot = ReadSnapshot(prometheus, pipeline);
        EXPECT_TRUE(snapshot.ok()) << snapshot.error().message;
        if (snapshot.ok()) utilization = snapshot->utilization;
        return utilization.contains("detect/gpu") &&
               std::abs(utilization.at("detect/gpu") - 0.4) < 0.04;
      },
      40s, 250ms))
      << (utilization.contains("detect/gpu") ? utilization.at("detect/gpu") : -1);
  EXPECT_EQ(utilization.size(), 1u);

  pipeline.spec.optimizer = "fa2";
  auto fa2 = ReadSnapshot(prometheus, pipeline);
  ASSERT_TRUE(fa2.ok()) << fa2.error().message;
  EXPECT_TRUE(fa2->utilization.empty());
}

// Two routers, each with a share of the requests, measure an index of 1.5 and 2 for one task: the
// pipeline's arrivals have 1 + 0.5 + 1 (the excesses add), and a task whose router reads an index
// below 1 (no router exports one: not ours) has none.
TEST(MetricsSource, AddsTheRoutersExcessDispersionOfEachTask) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  model::Pipeline pipeline = ThreePaths("lumpy");
  pipeline.spec.router = model::RouterSpec{};
  testing::Load load(pipeline.namespace_name, pipeline.name, {{"fast", 5}});
  auto& index = prometheus::BuildGauge()
                    .Name("pipescale_router_arrival_dispersion")
                    .Help("test")
                    .Register(load.registry());
  for (const auto& [pod, task, value] :
       {std::tuple{"r1", "detect", 1.5}, std::tuple{"r2", "detect", 2.0},
        std::tuple{"r1", "classify", 0.5}}) {
    index
        .Add({{"namespace", pipeline.namespace_name},
              {"pipeline", pipeline.name},
              {"task", task},
              {"pod", pod}})
        .Set(value);
  }
  const PrometheusClient prometheus(LocalEnv::Get().Var("PIPESCALE_PROMETHEUS"));
  std::map<std::string, double> dispersion;
  EXPECT_TRUE(Eventually(
      [&] {
        auto snapshot = ReadSnapshot(prometheus, pipeline);
        EXPECT_TRUE(snapshot.ok()) << snapshot.error().message;
        if (snapshot.ok()) dispersion = snapshot->task_dispersion;
        return dispersion.contains("detect");
      },
      40s, 250ms));
  ASSERT_TRUE(dispersion.contains("detect"));
  EXPECT_NEAR(dispersion.at("detect"), 2.5, 1e-9);
  EXPECT_FALSE(dispersion.contains("classify"));
}

// Each path's recent rate is the sum over the routers (each sees a share of the requests), in the
// snapshot and as the surge watch reads it alone; what is not a rate is left out.
TEST(MetricsSource, SumsTheRoutersRecentRatesOfEachPath) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  model::Pipeline pipeline = ThreePaths("surging");
  pipeline.spec.router = model::RouterSpec{};
  testing::Load load(pipeline.namespace_name, pipeline.name, {{"fast", 5}});
  auto& recent = prometheus::BuildGauge()
                     .Name("pipescale_router_recent_rate")
                     .Help("test")
                     .Register(load.registry());
  for (const auto& [pod, path, value] :
       {std::tuple{"r1", "fast", 20.0}, std::tuple{"r2", "fast", 30.0},
        std::tuple{"r1", "slow", -1.0}}) {
    recent
        .Add({{"namespace", pipeline.namespace_name},
              {"pipeline", pipeline.name},
              {"path", path},
              {"pod", pod}})
        .Set(value);
  }
  const PrometheusClient prometheus(LocalEnv::Get().Var("PIPESCALE_PROMETHEUS"));
  std::map<std::string, double> rates;
  EXPECT_TRUE(Eventually(
      [&] {
        auto snapshot = ReadSnapshot(prometheus, pipeline);
        EXPECT_TRUE(snapshot.ok()) << snapshot.error().message;
        if (snapshot.ok()) rates = snapshot->recent_path_rates_rps;
        return rates.contains("fast");
      },
      40s, 250ms));
  ASSERT_TRUE(rates.contains("fast"));
  EXPECT_NEAR(rates.at("fast"), 50, 1e-9);
  EXPECT_FALSE(rates.contains("slow"));
  SharedQueries shared(std::chrono::seconds(1));
  const auto alone = ReadRecentRates(prometheus, pipeline, &shared);
  ASSERT_TRUE(alone.ok()) << alone.error().message;
  EXPECT_EQ(*alone, rates);
}

// Each path's share of requests not answered 200 over the last minute, over the routers' series
// (FA2's feedback); a path whose series carry no code (not a router's) has no share.
TEST(MetricsSource, ReadsEachPathsShareNotAnswered) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  model::Pipeline pipeline = ThreePaths("unanswered");
  pipeline.spec.router = model::RouterSpec{};
  testing::Load load(pipeline.namespace_name, pipeline.name, {{"fast", 5}});
  // The harness's family (the same name, help and labels merge into it).
  auto& requests = prometheus::BuildCounter()
                       .Name("pipescale_requests_total")
                       .Help("Requests entering each execution path")
                       .Register(load.registry());
  auto series = [&](const char* path, const char* code) -> prometheus::Counter& {
    return requests.Add({{"namespace", pipeline.namespace_name},
                         {"pipeline", pipeline.name},
                         {"path", path},
                         {"code", code}});
  };
  prometheus::Counter& slow_ok = series("slow", "200");
  prometheus::Counter& slow_shed = series("slow", "503");
  prometheus::Counter& slow_late = series("slow", "504");
  prometheus::Counter& silent_ok = series("silent", "200");
  const PrometheusClient prometheus(LocalEnv::Get().Var("PIPESCALE_PROMETHEUS"));
  std::map<std::string, double> shares;
  EXPECT_TRUE(Eventually(
      [&] {
        // 8 answered, 1 refused and 1 late at each look: a fifth of "slow" failed.
        slow_ok.Increment(8);
        slow_shed.Increment(1);
        slow_late.Increment(1);
        silent_ok.Increment(10);
        auto snapshot = ReadSnapshot(prometheus, pipeline);
        EXPECT_TRUE(snapshot.ok()) << snapshot.error().message;
        if (snapshot.ok()) shares = snapshot->path_error_share;
        return shares.contains("slow") && std::abs(shares.at("slow") - 0.2) < 0.02;
      },
      40s, 250ms));
  ASSERT_TRUE(shares.contains("slow"));
  EXPECT_NEAR(shares.at("slow"), 0.2, 0.02);
  ASSERT_TRUE(shares.contains("silent"));
  EXPECT_NEAR(shares.at("silent"), 0, 1e-9);
  EXPECT_FALSE(shares.contains("fast"));
}

// The default queries asked once for all pipelines: each pipeline reads from the shared
// answers what its own queries would read, the shared answers hold no other pipeline's series,
// and three pipelines cost Prometheus as many queries as one.
TEST(MetricsSource, ManyPipelinesShareOneQueryPerMetric) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const std::vector<std::pair<std::string, double>> rates = {
      {"shared-a", 10}, {"shared-b", 20}, {"shared-c", 40}};
  const auto loads = FastPathLoads(rates);
  const PrometheusClient prometheus(LocalEnv::Get().Var("PIPESCALE_PROMETHEUS"));
  // The default windows need a few scrapes of every pipeline's counters.
  ASSERT_TRUE(testing::Eventually(
      [&] {
        for (const auto& [name, rps] : rates) {
          auto own = ReadSnapshot(prometheus, ThreePaths(name));
          if (!own.ok() || !own->path_rates_rps.contains("fast") ||
              own->path_rates_rps.at("fast") < 0.5 * rps) {
            return false;
          }
        }
        return true;
      },
      60s, 500ms));
  SharedQueries one(60s), all(60s);
  ASSERT_TRUE(ReadSnapshot(prometheus, ThreePaths("shared-a"), &one).ok());
  for (const auto& [name, rps] : rates) {
    auto shared = ReadSnapshot(prometheus, ThreePaths(name), &all);
    auto own = ReadSnapshot(prometheus, ThreePaths(name));
    ASSERT_TRUE(shared.ok() && own.ok());
    // Read moments apart, on windows of 10 s and more: the same rates within a scrape's worth
    // (a fresh series reads low until its windows fill, the same in both forms). The rates
    // differ twofold between pipelines: a pipeline given another's series would fail this.
    EXPECT_NEAR(shared->path_rates_rps.at("fast"), own->path_rates_rps.at("fast"), 0.15 * rps)
        << name;
    EXPECT_EQ(shared->missing, own->missing) << name;
    ASSERT_TRUE(shared->arrival_rate_rps.has_value() && own->arrival_rate_rps.has_value());
    EXPECT_NEAR(*shared->arrival_rate_rps, *own->arrival_rate_rps, 0.15 * rps) << name;
  }
  // pathRate, pathLatency, arrivalRate: once each, however many pipelines read them.
  EXPECT_EQ(one.queries_sent(), 3);
  EXPECT_EQ(all.queries_sent(), one.queries_sent());
}

// The door's count is what a wake waits on: its shared answer is asked again once it is 250 ms
// old, while the other default queries are kept for the shared max age.
TEST(MetricsSource, TheDoorsCountIsReadFreshWhereTheOtherQueriesAreShared) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const PrometheusClient prometheus(LocalEnv::Get().Var("PIPESCALE_PROMETHEUS"));
  model::Pipeline pipeline = ThreePaths("door-fresh");
  pipeline.spec.router = model::RouterSpec{};
  pipeline.spec.scale_to_zero = model::ScaleToZero{.after_idle_seconds = 60};
  SharedQueries shared(60s);
  ASSERT_TRUE(ReadSnapshot(prometheus, pipeline, &shared).ok());
  const long first = shared.queries_sent();
  ASSERT_TRUE(ReadSnapshot(prometheus, pipeline, &shared).ok());
  std::this_thread::sleep_for(300ms);  // the age under test, not a wait for a condition
  ASSERT_TRUE(ReadSnapshot(prometheus, pipeline, &shared).ok());
  // At most one more for the read at once (it may land past 250 ms on a slow machine), exactly
  // one for the read 300 ms on.
  EXPECT_GE(shared.queries_sent(), first + 1);
  EXPECT_LE(shared.queries_sent(), first + 2);
}

// A leader rebuilding the memory of many pipelines: each reads its own rate history, from one
// all-pipelines range query when read within one interval's grid step of the others, the same
// points it would read alone (their rates differ twofold: another's series would fail this).
TEST(MetricsSource, ManyPipelinesRebuildTheirHistoryFromOneRangeQuery) {
  PIPESCALE_REQUIRE_LOCAL_ENV();
  const std::vector<std::pair<std::string, double>> rates = {
      {"history-a", 10}, {"history-b", 20}, {"history-c", 40}};
  const auto loads = FastPathLoads(rates);
  const auto pipeline = [](const std::string& name) {
    model::Pipeline p = ThreePaths(name);
    p.spec.interval_seconds = 5;
    return p;
  };
  const PrometheusClient prometheus(LocalEnv::Get().Var("PIPESCALE_PROMETHEUS"));
  const auto now = [] {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  // Three steps of history for every pipeline: a few scrapes, then two more intervals.
  ASSERT_TRUE(testing::Eventually(
      [&] {
        for (const auto& [name, rps] : rates) {
          auto own = ReadRateHistory(prometheus, pipeline(name), 3, now());
          if (!own.ok() || !own->contains("fast") || own->at("fast").size() < 3) return false;
        }
        return true;
      },
      90s, 1s));
  // Three reads moments apart within one 5 s step of the grid.
  const double cell = std::floor(now() / 5) * 5;
  SharedQueries shared(60s);
  for (size_t i = 0; i < rates.size(); ++i) {
    const auto& [name, rps] = rates[i];
    const double at = cell + 0.5 + i;
    auto own = ReadRateHistory(prometheus, pipeline(name), 3, at);
    auto all = ReadRateHistory(prometheus, pipeline(name), 3, at, &shared);
    ASSERT_TRUE(own.ok() && all.ok());
    ASSERT_EQ(all->size(), own->size()) << name;
    ASSERT_EQ(all->at("fast").size(), 3u) << name;
    ASSERT_EQ(own->at("fast").size(), 3u) << name;
    for (size_t k = 0; k < 3; ++k) {  // the same sums, perhaps added in another order
      EXPECT_NEAR(all->at("fast")[k], own->at("fast")[k], 1e-9 * rps) << name << " step " << k;
    }
    EXPECT_NEAR(all->at("fast").back(), rps, 0.3 * rps) << name;
    EXPECT_FALSE(all->contains("silent")) << name;  // no series: absent, as alone
  }
  EXPECT_EQ(shared.queries_sent(), 1);
  // The next grid step is another range: asked again.
  ASSERT_TRUE(ReadRateHistory(prometheus, pipeline("history-a"), 3, cell + 5.5, &shared).ok());
  EXPECT_EQ(shared.queries_sent(), 2);
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
