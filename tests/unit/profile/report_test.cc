#include "profile/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "profile/progress.h"

namespace pipescale::profile {
namespace {

Report Sample(bool queue_reported) {
  Report r{.target = {"detect", "small", "cpu"},
           .address = "127.0.0.1:8080",
           .model = "detect",
           .inputs = "input [b, 16] FP32",
           .requests = 200,
           .warmup = 10};
  for (int b = 1; b <= 4; ++b) {
    const double d = 0.05 * b * b + 2 * b + 8;
    r.batches.push_back({.batch = b,
                         .summary = {.count = 200, .p50_ms = d, .mean_ms = d, .p99_ms = d + 0.5},
                         .queue_ms = queue_reported ? 0.01 : 0,
                         .queue_reported = queue_reported ? 200 : 0});
  }
  r.latency = *MakeLatency(r.batches, Statistic::kMean, FitModel::kQuadratic);
  return r;
}

TEST(Report, TheTableShowsEachSizeAndTheFit) {
  const std::string table = ReportTable(Sample(true));
  EXPECT_NE(
      table.find("detect/small on cpu: 127.0.0.1:8080, model detect, inputs input [b, 16] FP32"),
      std::string::npos)
      << table;
  EXPECT_NE(table.find("    2       200    12.200    12.200    12.700     0.010       12.2    "
                       "12.200   +0.0%"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("fitted d(b) = 0.05 b^2 + 2 b + 8 ms (RMSE"), std::string::npos) << table;
  EXPECT_NE(table.find("note: the queueing the server reported (parameters.pipescale_queue_ms, "
                       "800 of 800 answers) is subtracted"),
            std::string::npos)
      << table;
  EXPECT_NE(ReportTable(Sample(false)).find("note: latencies are whole round trips"),
            std::string::npos);
}

TEST(Report, JsonAndAProfilesEntry) {
  const auto j = nlohmann::json::parse(ReportJson(Sample(true)));
  EXPECT_EQ(j["statistic"], "mean");
  EXPECT_EQ(j["batches"].size(), 4u);
  EXPECT_EQ(j["batches"][1]["latencyMs"], 12.2);
  EXPECT_EQ(j["latencyMs"]["points"][0], nlohmann::json({1, 10.05}));
  EXPECT_NEAR(j["fit"]["a"].get<double>(), 0.05, 1e-9);
  EXPECT_EQ(ReportYaml(Sample(true)),
            "# detect/small on cpu, measured by pipescale profile at 127.0.0.1:8080: the mean of "
            "200 requests per batch size\n"
            "- hardwareClass: cpu\n"
            "  latencyMs: {points: [[1, 10.05], [2, 12.2], [3, 14.45], [4, 16.8]]}\n");
}

TEST(Report, AWideSpreadIsNoted) {
  Report r = Sample(true);
  r.batches[2].summary.p99_ms = 3 * r.batches[2].summary.p50_ms;
  const auto notes = MeasurementNotes(r);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[1],
            "at batch size 3 the p99 is 3.0 times the p50: the planners take a batch's "
            "latency as fixed");
}

TEST(Progress, LinesForLogsAndABarForTerminals) {
  const MeasuredBatch done{.batch = 2,
                           .summary = {.count = 5, .p50_ms = 1, .mean_ms = 2, .p99_ms = 3}};
  std::ostringstream lines;
  ProgressPrinter printer(lines, ProgressStyle::kLines);
  printer.Update({.size_index = 1, .sizes = 3, .batch = 2, .done = 3, .total = 6});
  printer.Update(
      {.size_index = 1, .sizes = 3, .batch = 2, .done = 6, .total = 6, .finished = &done});
  printer.Finish();
  EXPECT_EQ(lines.str(),
            "batch size 2 (2/3): 5 requests, p50 1.000 ms, mean 2.000 ms, p99 3.000 ms\n");

  std::ostringstream bar;
  ProgressPrinter tty(bar, ProgressStyle::kBar);
  tty.Update({.size_index = 1, .sizes = 2, .batch = 2, .done = 5, .total = 10, .elapsed_s = 3});
  tty.Update({.size_index = 1, .sizes = 2, .batch = 2, .done = 6, .total = 10, .elapsed_s = 3.05});
  tty.Finish();
  EXPECT_EQ(bar.str(),
            "\r[##################......] batch size 2 (2/2): 5/10 requests, 3 s, at least 1 s "
            "left\033[K\r\033[K");
  std::ostringstream quiet;
  ProgressPrinter none(quiet, ProgressStyle::kNone);
  none.Update({.finished = &done});
  EXPECT_EQ(quiet.str(), "");
}

}  // namespace
}  // namespace pipescale::profile
