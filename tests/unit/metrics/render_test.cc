#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "metrics/source.h"
#include "support/shell.h"

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

// The default rate queries evaluated by Prometheus's own engine (promtool) on a counter rising
// 10 per second, scraped every 2 s (the chart's PodMonitor) and every 30 s (a Prometheus left at
// its usual interval), read between scrapes: both read 10, never "missing", which would hold the
// pipeline's plan for as long as the scrapes stay sparse.
TEST(DefaultQueries, ReadTheRateAtTheChartsScrapeIntervalAndAtSparserOnes) {
  char dir[] = "/tmp/pipescale-promql.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::map<std::string, std::string> names = {
      {"namespace", "ns"}, {"pipeline", "p"}, {"path", "a"}};
  std::ofstream test(std::string(dir) + "/test.yaml");
  test << "rule_files: []\ntests:\n";
  for (const auto& [interval, increase, at] :
       {std::tuple{"2s", 20, "5m1s"}, {"30s", 300, "5m10s"}, {"30s", 300, "5m20s"}}) {
    test << "  - interval: " << interval << "\n    input_series:\n"
         << "      - series: 'pipescale_requests_total{namespace=\"ns\",pipeline=\"p\",path=\"a\","
            "code=\"200\"}'\n        values: '0+"
         << increase << "x200'\n    promql_expr_test:\n";
    for (const char* query : {"pathRate", "arrivalRate"}) {
      test << "      - expr: 'round(" << Render(DefaultQueries().at(query), names)
           << ", 0.01)'\n        eval_time: " << at
           << "\n        exp_samples: [{labels: '{}', value: 10}]\n";
    }
  }
  test.close();
  const testing::ShellResult r =
      testing::RunShell(std::string("cd ") + dir + " && promtool test rules test.yaml");
  EXPECT_EQ(r.code, 0) << r.out;
  testing::RunShell(std::string("rm -rf ") + dir);
}

// The all-pipelines form of the rate queries, evaluated by promtool over two pipelines of two
// paths each: one series per (namespace, pipeline[, path]) with the value each pipeline's own
// query gives it (checked above), so one query serves them all.
TEST(DefaultQueries, TheAllPipelinesFormKeepsEachPipelinesValue) {
  char dir[] = "/tmp/pipescale-promql.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::ofstream test(std::string(dir) + "/test.yaml");
  test << "rule_files: []\ntests:\n  - interval: 2s\n    input_series:\n";
  // Pipeline p: path a at 10/s, b at 30/s; pipeline q in another namespace: path a at 20/s.
  for (const auto& [ns, pipeline, path, per_2s] :
       {std::tuple{"ns", "p", "a", 20}, {"ns", "p", "b", 60}, {"other", "q", "a", 40}}) {
    test << "      - series: 'pipescale_requests_total{namespace=\"" << ns << "\",pipeline=\""
         << pipeline << "\",path=\"" << path << "\",code=\"200\"}'\n        values: '0+" << per_2s
         << "x200'\n";
  }
  test << "    promql_expr_test:\n";
  const auto expect = [&](const std::string& query, const std::string& samples) {
    test << "      - expr: 'round(" << query << ", 0.01)'\n        eval_time: 5m1s\n"
         << "        exp_samples: [" << samples << "]\n";
  };
  expect(AllPipelinesQuery("pathRate"),
         "{labels: '{namespace=\"ns\",pipeline=\"p\",path=\"a\"}', value: 10}, "
         "{labels: '{namespace=\"ns\",pipeline=\"p\",path=\"b\"}', value: 30}, "
         "{labels: '{namespace=\"other\",pipeline=\"q\",path=\"a\"}', value: 20}");
  expect(AllPipelinesQuery("arrivalRate"),
         "{labels: '{namespace=\"ns\",pipeline=\"p\"}', value: 40}, "
         "{labels: '{namespace=\"other\",pipeline=\"q\"}', value: 20}");
  test.close();
  const testing::ShellResult r =
      testing::RunShell(std::string("cd ") + dir + " && promtool test rules test.yaml");
  EXPECT_EQ(r.code, 0) << r.out;
  testing::RunShell(std::string("rm -rf ") + dir);
}

// Every default has both forms, and the all-pipelines form names no pipeline.
TEST(DefaultQueries, EachHasAnAllPipelinesForm) {
  for (const auto& [name, query] : DefaultQueries()) {
    const std::string all = AllPipelinesQuery(name);
    EXPECT_EQ(all.find("{{pipeline}}"), std::string::npos) << name;
    EXPECT_NE(all.find("namespace, pipeline"), std::string::npos) << name;
    EXPECT_NE(query.find(R"(pipeline="{{pipeline}}")"), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace pipescale::metrics
