// The gym's report as each reader gets it: the JSON's numbers and keys (the loadgen's names per
// path), the table's policies, paths and ratio to the best baseline, the CSV's shape and
// columns, and an SVG that is well-formed XML with a line per policy in every panel.
#include "gym/render.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace pipescale::gym {
namespace {

// Two policies, two paths, three intervals, with round numbers so that every expectation below
// can be worked out by hand: fa2 answers 900 + 400 = 1300 within the SLO for $2 (650 per $),
// hpa 800 + 300 = 1100 for $4 (275 per $), so fa2 does 650 / 275 = 2.36x the baseline.
Report SampleReport() {
  Report report{.pipeline = "ocr", .trace = "fa2:120", .seconds = 120, .seed = 7};
  PolicyReport fa2{.policy = "fa2",
                   .replica_hours = {{"cpu", 0.5}, {"t4", 0.25}},
                   .cost = {{"cpu", 0.5}, {"t4", 1.5}},
                   .total_cost = 2,
                   .pod_starts = 6,
                   .scaling_actions = 4,
                   .mean_replicas = 4.5,
                   .wall_seconds = 0.75};
  fa2.paths["detect"] = {.slo_ms = 200,
                         .sent = 1000,
                         .answered = 950,
                         .within_slo = 900,
                         .codes = {{"200", 950}, {"503", 40}, {"504", 10}},
                         .dropped = {{"deadline", 10}, {"late", 40}},
                         .mean_ms = 90,
                         .p50_ms = 80,
                         .p99_ms = 190};
  fa2.paths["read"] = {.slo_ms = 400,
                       .sent = 500,
                       .answered = 450,
                       .within_slo = 400,
                       .codes = {{"200", 450}, {"503", 50}},
                       .dropped = {{"late", 50}},
                       .p50_ms = 150,
                       .p99_ms = 380};
  PolicyReport hpa = fa2;
  hpa.policy = "hpa";
  hpa.total_cost = 4;
  hpa.cost = {{"cpu", 1}, {"t4", 3}};
  hpa.paths["detect"].within_slo = 800;
  hpa.paths["detect"].codes = {{"200", 850}, {"503", 100}, {"504", 50}};
  hpa.paths["read"].within_slo = 300;
  for (int i = 1; i <= 3; ++i) {
    const double at = 40.0 * i;
    fa2.intervals.push_back({.at_s = at,
                             .offered_rps = 10.0 * i,
                             .replicas = {{"det", i}, {"ocr", 2}},
                             .p99_ms = {{"detect", 150.0 + i}, {"read", 300.0 + i}},
                             .attainment = {{"detect", 0.9}, {"read", 0.8}},
                             .cost_per_hour = 1.5});
    hpa.intervals.push_back({.at_s = at,
                             .offered_rps = 10.0 * i,
                             .replicas = {{"det", 1}, {"ocr", 3 + i}},
                             .p99_ms = {{"detect", 180.0}, {"read", 390.0}},
                             .attainment = {{"detect", 0.8}, {"read", 0.6}},
                             .cost_per_hour = 3});
  }
  report.policies = {fa2, hpa};
  return report;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> fields;
  std::istringstream in(line);
  for (std::string field; std::getline(in, field, ',');) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

TEST(GymReport, GoodputSumsWithinSloAndAdmittedAttainmentLeavesOut503s) {
  const Report report = SampleReport();
  EXPECT_EQ(report.policies[0].Goodput(), 1300);
  EXPECT_DOUBLE_EQ(report.policies[0].paths.at("detect").AdmittedAttainment(), 900.0 / 960);
  const PathOutcome all_shed{.sent = 10, .codes = {{"503", 10}}};
  EXPECT_DOUBLE_EQ(all_shed.AdmittedAttainment(), 0);
}

TEST(GymRenderJson, GoodputAndGoodputPerDollar) {
  const nlohmann::json j = ToJson(SampleReport());
  ASSERT_EQ(j["policies"].size(), 2u);
  const nlohmann::json& fa2 = j["policies"][0];
  EXPECT_EQ(fa2["policy"], "fa2");
  EXPECT_EQ(fa2["goodput"], 1300);
  EXPECT_DOUBLE_EQ(fa2["goodputPerDollar"].get<double>(), 650);
  EXPECT_DOUBLE_EQ(j["policies"][1]["goodputPerDollar"].get<double>(), 275);
  EXPECT_EQ(j["bestBaseline"], "hpa");
  EXPECT_DOUBLE_EQ(fa2["vsBestBaseline"].get<double>(), 650.0 / 275);
  EXPECT_FALSE(fa2["baseline"].get<bool>());
  EXPECT_TRUE(j["policies"][1]["baseline"].get<bool>());
}

TEST(GymRenderJson, PathsUseTheLoadgensNamesAndAdmittedAttainmentLeavesOut503s) {
  const nlohmann::json j = ToJson(SampleReport());
  const nlohmann::json& detect = j["policies"][1]["paths"]["detect"];
  for (const char* key : {"sloMs", "sent", "answered", "withinSlo", "codes", "dropped", "meanMs",
                          "p50Ms", "p99Ms", "sloAttainment", "admittedSloAttainment"}) {
    EXPECT_TRUE(detect.contains(key)) << key;
  }
  EXPECT_EQ(detect.size(), 11u);
  EXPECT_DOUBLE_EQ(detect["sloAttainment"].get<double>(), 0.8);
  EXPECT_DOUBLE_EQ(detect["admittedSloAttainment"].get<double>(), 800.0 / 900);
  EXPECT_EQ(detect["codes"]["503"], 100);
  EXPECT_EQ(j["policies"][0]["paths"]["detect"]["dropped"]["late"], 40);
  EXPECT_DOUBLE_EQ(detect["p99Ms"].get<double>(), 190);
}

TEST(GymRenderJson, PolicyAndIntervalKeys) {
  const nlohmann::json j = ToJson(SampleReport());
  EXPECT_EQ(j["pipeline"], "ocr");
  EXPECT_EQ(j["seed"], 7);
  const nlohmann::json& hpa = j["policies"][1];
  for (const char* key : {"replicaHours", "cost", "totalCost", "podStarts", "scalingActions",
                          "accuracy", "meanReplicas", "wallSeconds", "intervals"}) {
    EXPECT_TRUE(hpa.contains(key)) << key;
  }
  EXPECT_DOUBLE_EQ(hpa["replicaHours"]["t4"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(hpa["cost"]["t4"].get<double>(), 3);
  ASSERT_EQ(hpa["intervals"].size(), 3u);
  const nlohmann::json& second = hpa["intervals"][1];
  EXPECT_DOUBLE_EQ(second["atS"].get<double>(), 80);
  EXPECT_DOUBLE_EQ(second["offeredRps"].get<double>(), 20);
  EXPECT_EQ(second["replicas"]["ocr"], 5);
  EXPECT_DOUBLE_EQ(second["p99Ms"]["read"].get<double>(), 390);
  EXPECT_DOUBLE_EQ(second["attainment"]["read"].get<double>(), 0.6);
  EXPECT_DOUBLE_EQ(second["costPerHour"].get<double>(), 3);
}

TEST(GymRenderJson, NoBaselineMeansNoRatio) {
  Report report = SampleReport();
  report.policies[1].policy = "loki";
  const nlohmann::json j = ToJson(report);
  EXPECT_TRUE(j["bestBaseline"].is_null());
  EXPECT_TRUE(j["policies"][0]["vsBestBaseline"].is_null());
}

TEST(GymRender, BaselinesAreHpaKedaKpaAndFixed) {
  for (const char* name : {"hpa", "keda", "kpa", "fixed:3", "fixed"}) EXPECT_TRUE(IsBaseline(name));
  for (const char* name : {"fa2", "loki", "kairos", "mark", "hpa2"}) EXPECT_FALSE(IsBaseline(name));
}

TEST(GymRenderTable, NamesEveryPolicyAndPathWithTheirFigures) {
  const std::string table = RenderTable(SampleReport());
  EXPECT_EQ(Lines(table).front(), "pipeline ocr, trace fa2:120, 120 s simulated, seed 7");
  for (const char* text : {"fa2", "hpa", "path detect", "path read"}) {
    EXPECT_NE(table.find(text), std::string::npos) << text;
  }
  EXPECT_NE(table.find("50 (late 40, deadline 10)"), std::string::npos) << table;
  EXPECT_NE(table.find("90.0%"), std::string::npos) << table;  // fa2's detect attainment
  EXPECT_NE(table.find("650.0"), std::string::npos) << table;
  EXPECT_EQ(table.find("ACCURACY"), std::string::npos) << "no policy reported accuracy";
  for (const std::string& line : Lines(table)) EXPECT_LE(line.size(), 100u) << line;
}

// fa2's goodput per dollar over hpa's, the only baseline: 650 / 275. A baseline that did worse
// does not change it; one that did better becomes the reference.
TEST(GymRenderTable, RatioIsAgainstTheBestBaseline) {
  Report report = SampleReport();
  EXPECT_NE(RenderTable(report).find("2.36x"), std::string::npos) << RenderTable(report);
  PolicyReport worse = report.policies[1];
  worse.policy = "fixed:3";
  worse.total_cost = 8;
  report.policies.push_back(worse);
  const std::string table = RenderTable(report);
  EXPECT_NE(table.find("2.36x"), std::string::npos) << table;
  EXPECT_NE(table.find("0.50x"), std::string::npos) << table;  // fixed:3 against hpa
  EXPECT_NE(table.find("best baseline, hpa"), std::string::npos) << table;
  report.policies[2].total_cost = 1;  // 1100 per dollar: now the best baseline
  const std::string better = RenderTable(report);
  EXPECT_NE(better.find("best baseline, fixed:3"), std::string::npos) << better;
  EXPECT_NE(better.find("0.59x"), std::string::npos) << better;  // fa2: 650 / 1100
}

TEST(GymRenderTable, AccuracyOnlyWhenSomePolicyHasIt) {
  Report report = SampleReport();
  report.policies[0].accuracy = 0.875;
  const std::string table = RenderTable(report);
  EXPECT_NE(table.find("ACCURACY"), std::string::npos) << table;
  EXPECT_NE(table.find("0.875"), std::string::npos) << table;
}

// Every row of a table has its columns where the header has them.
TEST(GymRenderTable, ColumnsAreAligned) {
  Report report = SampleReport();
  report.policies[1].policy = "a-much-longer-policy";
  const std::vector<std::string> lines = Lines(RenderTable(report));
  for (size_t i = 0; i + 2 < lines.size(); ++i) {
    if (lines[i].rfind("POLICY  ", 0) != 0 || lines[i].find("SENT") == std::string::npos) continue;
    const size_t end = lines[i].find("WITHIN-SLO") + std::string("WITHIN-SLO").size();
    for (size_t row = i + 1; row <= i + 2; ++row) {
      ASSERT_GT(lines[row].size(), end);
      EXPECT_NE(lines[row][end - 1], ' ') << lines[row];
      EXPECT_EQ(lines[row][end], ' ') << lines[row];
    }
  }
}

TEST(GymRenderCsv, OneRowPerPolicyAndIntervalWithConsistentColumns) {
  const std::vector<std::string> lines = Lines(RenderCsv(SampleReport()));
  ASSERT_EQ(lines.size(), 1u + 2 * 3);
  EXPECT_EQ(lines[0],
            "policy,at_s,offered_rps,replicas:det,replicas:ocr,p99_ms:detect,p99_ms:read,"
            "attainment:detect,attainment:read,cost_per_hour");
  const size_t columns = Fields(lines[0]).size();
  for (const std::string& line : lines) EXPECT_EQ(Fields(line).size(), columns) << line;
  EXPECT_EQ(lines[5], "hpa,80,20,1,5,180,390,0.8,0.6,3");
}

// A task only one row has gets a column, and the rows without it an empty cell.
TEST(GymRenderCsv, ColumnsAreTheUnionAndQuotedWhenNeeded) {
  Report report = SampleReport();
  report.policies[0].intervals[0].replicas["aux"] = 4;
  report.policies[1].policy = "fixed:1,2";
  const std::vector<std::string> lines = Lines(RenderCsv(report));
  const std::vector<std::string> head = Fields(lines[0]);
  ASSERT_EQ(head[3], "replicas:aux");
  EXPECT_EQ(Fields(lines[1])[3], "4");
  EXPECT_EQ(Fields(lines[2])[3], "");
  EXPECT_EQ(lines[4].rfind("\"fixed:1,2\",40,", 0), 0u) << lines[4];
}

// Tags balance, attribute values are quoted and hold no '<', every '&' starts an entity: what
// an XML parser would insist on of this document.
::testing::AssertionResult WellFormed(const std::string& xml) {
  static const std::regex kEntity(R"(^&(amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)");
  static const std::regex kTag(R"(^([A-Za-z][\w:.-]*)(\s+[\w:.-]+="[^"<]*")*\s*(/?)$)");
  for (size_t at = xml.find('&'); at != std::string::npos; at = xml.find('&', at + 1)) {
    if (!std::regex_search(xml.substr(at, 12), kEntity)) {
      return ::testing::AssertionFailure() << "bare & at " << xml.substr(at, 20);
    }
  }
  std::vector<std::string> open;
  for (size_t at = xml.find('<'); at != std::string::npos; at = xml.find('<', at + 1)) {
    const size_t end = xml.find('>', at);
    if (end == std::string::npos) return ::testing::AssertionFailure() << "unclosed <";
    const std::string tag = xml.substr(at + 1, end - at - 1);
    std::smatch m;
    if (tag.starts_with('?')) continue;
    if (tag.starts_with('/')) {
      if (open.empty() || open.back() != tag.substr(1)) {
        return ::testing::AssertionFailure() << "</" << tag.substr(1) << "> closes nothing open";
      }
      open.pop_back();
    } else if (!std::regex_match(tag, m, kTag)) {
      return ::testing::AssertionFailure() << "malformed tag <" << tag << ">";
    } else if (m[3].length() == 0) {
      open.push_back(m[1]);
    }
  }
  if (!open.empty()) return ::testing::AssertionFailure() << "<" << open.back() << "> not closed";
  return ::testing::AssertionSuccess();
}

TEST(GymRenderSvg, TheCheckerCatchesWhatItShould) {
  EXPECT_TRUE(WellFormed(R"(<svg a="1"><g><text>x &amp; y</text></g><line/></svg>)"));
  EXPECT_FALSE(WellFormed("<svg><g></svg>"));
  EXPECT_FALSE(WellFormed("<svg><text>a<b</text></svg>"));
  EXPECT_FALSE(WellFormed("<svg><text>a & b</text></svg>"));
  EXPECT_FALSE(WellFormed(R"(<svg a="x"y"></svg>)"));
}

TEST(GymRenderSvg, IsWellFormed) {
  const std::string svg = RenderSvg(SampleReport());
  EXPECT_TRUE(svg.starts_with("<?xml"));
  EXPECT_TRUE(WellFormed(svg));
}

// The panels, in order, each as the text between its opening tag and the next panel's.
std::vector<std::string> Panels(const std::string& svg) {
  std::vector<std::string> panels;
  const std::string open = "<g class=\"panel\"";
  for (size_t at = svg.find(open); at != std::string::npos;) {
    const size_t next = svg.find(open, at + 1);
    panels.push_back(svg.substr(at, next == std::string::npos ? next : next - at));
    at = next;
  }
  return panels;
}

// The stroke colour of every polyline in a panel, one per line drawn.
std::vector<std::string> LineColours(const std::string& panel) {
  static const std::regex kPolyline(R"re(<polyline [^>]*stroke="(#[0-9a-f]{6})")re");
  std::vector<std::string> colours;
  for (auto it = std::sregex_iterator(panel.begin(), panel.end(), kPolyline);
       it != std::sregex_iterator(); ++it) {
    colours.push_back((*it)[1]);
  }
  return colours;
}

// Load and replicas: a line per policy; p99 and attainment: per policy and path. Each policy
// has its own colour, the same in every panel.
TEST(GymRenderSvg, OnePolylinePerPolicyPerPanel) {
  const std::vector<std::string> panels = Panels(RenderSvg(SampleReport()));
  ASSERT_EQ(panels.size(), 4u);
  const std::vector<std::string> policies = LineColours(panels[0]);
  ASSERT_EQ(policies.size(), 2u);
  EXPECT_NE(policies[0], policies[1]);
  EXPECT_EQ(LineColours(panels[1]), policies);
  for (const char* title : {"<title>fa2</title>", "<title>hpa</title>"}) {
    EXPECT_NE(panels[1].find(title), std::string::npos) << "replicas summed per policy";
  }
  for (size_t i : {2, 3}) {
    const std::vector<std::string> colours = LineColours(panels[i]);
    ASSERT_EQ(colours.size(), 4u) << "panel " << i;  // 2 policies x 2 paths
    EXPECT_EQ(std::count(colours.begin(), colours.end(), policies[0]), 2);
    EXPECT_EQ(std::count(colours.begin(), colours.end(), policies[1]), 2);
  }
  EXPECT_NE(panels[2].find("stroke-dasharray=\"6 4\""), std::string::npos) << "no SLO line";
}

// The points of each polyline in a panel, as (x, y) pairs.
std::vector<std::vector<std::pair<double, double>>> Points(const std::string& panel) {
  static const std::regex kPoints(R"re(<polyline [^>]*points="([^"]*)")re");
  std::vector<std::vector<std::pair<double, double>>> lines;
  for (auto it = std::sregex_iterator(panel.begin(), panel.end(), kPoints);
       it != std::sregex_iterator(); ++it) {
    std::istringstream in((*it)[1].str());
    std::vector<std::pair<double, double>> points;
    double x = 0, y = 0;
    char comma = 0;
    while (in >> x >> comma >> y) points.emplace_back(x, y);
    lines.push_back(points);
  }
  return lines;
}

// A point per interval, left to right; on detect fa2's p99 (151 ms) is drawn below hpa's
// (180 ms), so further down the page; the load rises, so its line climbs the page.
TEST(GymRenderSvg, PointsFollowTheIntervals) {
  const std::vector<std::string> panels = Panels(RenderSvg(SampleReport()));
  const auto load = Points(panels[0]);
  ASSERT_EQ(load.size(), 2u);
  ASSERT_EQ(load[0].size(), 3u);
  EXPECT_LT(load[0][0].first, load[0][1].first);
  EXPECT_GT(load[0][0].second, load[0][2].second);
  const auto p99 = Points(panels[2]);  // detect: fa2, hpa; then read: fa2, hpa
  ASSERT_EQ(p99.size(), 4u);
  ASSERT_EQ(p99[0].size(), 3u);
  ASSERT_EQ(p99[1].size(), 3u);
  EXPECT_GT(p99[0][0].second, p99[1][0].second);
}

// An interval without a 200 has no p99 (the row holds 0): its point is left out rather than
// drawn as the fastest latency of the run.
TEST(GymRenderSvg, NoP99PointWithoutAnswers) {
  Report report = SampleReport();
  report.policies[0].intervals[1].p99_ms["detect"] = 0;
  const auto p99 = Points(Panels(RenderSvg(report))[2]);
  ASSERT_EQ(p99.size(), 4u);
  EXPECT_EQ(p99[0].size(), 2u);
  EXPECT_EQ(p99[1].size(), 3u);
}

TEST(GymRenderSvg, OnePolicyDrawsReplicasPerTask) {
  Report report = SampleReport();
  report.policies.pop_back();
  const std::vector<std::string> panels = Panels(RenderSvg(report));
  ASSERT_EQ(panels.size(), 4u);
  EXPECT_EQ(LineColours(panels[0]).size(), 1u);
  EXPECT_EQ(LineColours(panels[1]).size(), 2u);  // det and ocr
  EXPECT_NE(panels[1].find(">det</text>"), std::string::npos);
}

Report WithXmlSpecialNames() {
  Report report = SampleReport();
  report.pipeline = "a&b";
  report.policies[0].policy = "fixed:<3>";
  for (PolicyReport& p : report.policies) {
    p.paths["x\"y'z&"] = p.paths.at("read");
    for (IntervalRow& row : p.intervals) row.p99_ms["x\"y'z&"] = 100;
  }
  return report;
}

TEST(GymRenderSvg, EscapesXmlSpecialCharacters) {
  const std::string svg = RenderSvg(WithXmlSpecialNames());
  EXPECT_TRUE(WellFormed(svg));
  EXPECT_NE(svg.find("fixed:&lt;3&gt;"), std::string::npos);
  EXPECT_NE(svg.find("x&quot;y&apos;z&amp;"), std::string::npos);
  EXPECT_NE(svg.find("a&amp;b"), std::string::npos);
  EXPECT_EQ(svg.find("fixed:<3>"), std::string::npos);
}

// A real parser agrees, when one is installed.
TEST(GymRenderSvg, XmllintAcceptsIt) {
  if (std::system("which xmllint > /dev/null 2>&1") != 0) GTEST_SKIP() << "no xmllint";
  const std::string file = ::testing::TempDir() + "/gym-render.svg";
  for (const Report& report : {SampleReport(), WithXmlSpecialNames()}) {
    std::ofstream(file) << RenderSvg(report);
    EXPECT_EQ(std::system(("xmllint --noout " + file).c_str()), 0);
  }
}

}  // namespace
}  // namespace pipescale::gym
