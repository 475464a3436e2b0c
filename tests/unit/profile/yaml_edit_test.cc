#include "profile/yaml_edit.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "api/pipeline_parse.h"

namespace pipescale::profile {
namespace {

std::string Example(const std::string& name) {
  std::ifstream in(std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The lines of `after` that differ from `before`'s: the first and last differing line
// (counted from each end, so inserted lines show) must bracket only the edit.
struct Changed {
  std::vector<std::string> removed, added;
};

Changed Diff(const std::string& before, const std::string& after) {
  const auto a = Lines(before), b = Lines(after);
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) {
    ++tail;
  }
  return {{a.begin() + head, a.end() - tail}, {b.begin() + head, b.end() - tail}};
}

// Points measured at d(b) = 0.05 b^2 + 2 b + 8 (mean), for sizes 1..n.
Latency Measured(int n, FitModel model = FitModel::kQuadratic) {
  std::vector<MeasuredBatch> batches;
  for (int b = 1; b <= n; ++b) {
    batches.push_back({.batch = b, .summary = {.mean_ms = 0.05 * b * b + 2 * b + 8}});
  }
  return *MakeLatency(batches, Statistic::kMean, model);
}

const model::Profile* ProfileOf(const model::Pipeline& p, const Target& t) {
  const model::Variant* v = p.FindVariant(t.task, t.variant);
  return v == nullptr ? nullptr : v->FindProfile(t.hardware_class);
}

// Parses `text` and checks that the target's profile is the measured one, fitted.
void ExpectProfile(const std::string& text, const Target& t, const Latency& latency) {
  const api::ParsedPipeline parsed = api::ParsePipeline(text);
  ASSERT_TRUE(parsed.pipeline) << parsed.errors.front().ToString() << "\n" << text;
  const model::Profile* profile = ProfileOf(*parsed.pipeline, t);
  ASSERT_NE(profile, nullptr);
  EXPECT_EQ(profile->latency.points, latency.points);
  EXPECT_EQ(profile->latency.fitted, latency.fit.has_value());
  if (latency.fit) {
    EXPECT_EQ(profile->latency.quadratic, latency.fit->coefficients);
  }
}

TEST(YamlEdit, AFlowValueIsReplacedOnItsLineAndTheCommentAfterItStays) {
  const std::string before = Example("mark-classify.yaml");
  const Target t{"classify", "inception-v3", "p2-xlarge"};
  const Latency latency = Measured(16);
  auto after = SetProfileLatency(before, t, latency);
  ASSERT_TRUE(after.ok()) << after.error().message;
  const Changed d = Diff(before, *after);
  ASSERT_EQ(d.removed.size(), 1u);
  EXPECT_EQ(d.removed[0], "              latencyMs: {quadratic: {a: 0, b: 10, c: 40}}");
  ASSERT_EQ(d.added.size(), 4u) << *after;  // 16 points, wrapped under the first
  EXPECT_EQ(d.added[0].rfind("              latencyMs: {points: [[1, 10.05], [2, 12.2], ", 0), 0u)
      << d.added[0];
  for (size_t i = 1; i < d.added.size(); ++i) {
    EXPECT_EQ(d.added[i].rfind(std::string(35, ' ') + "[", 0), 0u) << d.added[i];
    EXPECT_LE(d.added[i].size(), 100u) << d.added[i];
  }
  EXPECT_TRUE(d.added.back().ends_with("]]}")) << d.added.back();
  ExpectProfile(*after, t, latency);
  // The comment that followed the value on its line.
  auto c5 = SetProfileLatency(before, {"classify", "inception-v3", "c5-large"}, Measured(3));
  ASSERT_TRUE(c5.ok()) << c5.error().message;
  const Changed dc = Diff(before, *c5);
  ASSERT_EQ(dc.added.size(), 1u);
  EXPECT_EQ(dc.added[0],
            "              latencyMs: {points: [[1, 10.05], [2, 12.2], [3, 14.45]]}   # 4.73 req/s "
            "unbatched");
}

TEST(YamlEdit, ABlockValueIsReplacedAndEveryOtherLineStays) {
  const std::string before = Example("kairos-rm2.yaml");
  const Target t{"rank", "rm2", "c5n-2xlarge"};
  const Latency latency = Measured(5);
  auto after = SetProfileLatency(before, t, latency);
  ASSERT_TRUE(after.ok()) << after.error().message;
  const Changed d = Diff(before, *after);
  ASSERT_EQ(d.removed.size(), 2u);
  EXPECT_EQ(d.removed[0], "                model: table");
  EXPECT_EQ(d.added, (std::vector<std::string>{
                         "                points: [[1, 10.05], [2, 12.2], [3, 14.45], [4, 16.8], "
                         "[5, 19.25]]"}));
  ExpectProfile(*after, t, latency);
  // Kept as a table when asked.
  const Latency table = Measured(5, FitModel::kTable);
  auto as_table = SetProfileLatency(before, t, table);
  ASSERT_TRUE(as_table.ok()) << as_table.error().message;
  const Changed dt = Diff(before, *as_table);  // "model: table" stays as it was
  EXPECT_EQ(dt.removed.size(), 1u);
  EXPECT_EQ(dt.added.size(), 1u);
  ExpectProfile(*as_table, t, table);
}

TEST(YamlEdit, CommentsInsideAndAroundABlockValue) {
  const std::string before = R"(# head
apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: p}
spec:
  hardwareClasses: [{name: cpu}]
  tasks:
    - name: t
      variants:
        - name: v
          batchSize: {max: 3}
          profiles:
            - hardwareClass: cpu
              latencyMs:   # measured last year
                # by hand
                points: [[1, 5], [2, 6],
                         [3, 7]]  # three points

              # after the value
          # after the profiles
  paths: [{name: p, tasks: [t], sloMs: 100}]
)";
  const Target t{"t", "v", "cpu"};
  auto after = SetProfileLatency(before, t, Measured(3));
  ASSERT_TRUE(after.ok()) << after.error().message;
  const Changed d = Diff(before, *after);
  EXPECT_EQ(d.removed,
            (std::vector<std::string>{"                points: [[1, 5], [2, 6],",
                                      "                         [3, 7]]  # three points"}));
  EXPECT_EQ(d.added,
            (std::vector<std::string>{
                "                points: [[1, 10.05], [2, 12.2], [3, 14.45]]  # three points"}));
  ExpectProfile(*after, t, Measured(3));
}

TEST(YamlEdit, AProfileIsAddedInTheStyleOfTheVariantsOthers) {
  // mark-classify without its p2-xlarge profile (block items): it comes back as a block item.
  std::string before = Example("mark-classify.yaml");
  const std::string p2 =
      "            - hardwareClass: p2-xlarge\n"
      "              latencyMs: {quadratic: {a: 0, b: 10, c: 40}}\n";
  ASSERT_NE(before.find(p2), std::string::npos);
  before.erase(before.find(p2), p2.size());
  const Target t{"classify", "inception-v3", "p2-xlarge"};
  auto after = SetProfileLatency(before, t, Measured(3));
  ASSERT_TRUE(after.ok()) << after.error().message;
  const Changed d = Diff(before, *after);
  EXPECT_TRUE(d.removed.empty());
  EXPECT_EQ(d.added, (std::vector<std::string>{
                         "            - hardwareClass: p2-xlarge", "              latencyMs:",
                         "                points: [[1, 10.05], [2, 12.2], [3, 14.45]]"}));
  ExpectProfile(*after, t, Measured(3));
}

TEST(YamlEdit, AProfileIsAddedAfterFlowItemsAndIntoFlowLists) {
  // loki-traffic's profiles are flow maps in a block list; a second class to add one for.
  std::string before = Example("loki-traffic.yaml");
  const std::string classes = "  hardwareClasses:\n";
  before.insert(before.find(classes) + classes.size(), "    - {name: cpu}\n");
  const Target t{"detect", "yolov5s", "cpu"};
  auto after = SetProfileLatency(before, t, Measured(4));
  ASSERT_TRUE(after.ok()) << after.error().message;
  const Changed d = Diff(before, *after);
  EXPECT_TRUE(d.removed.empty());
  EXPECT_EQ(d.added,
            (std::vector<std::string>{"            - {hardwareClass: cpu, latencyMs: {points: "
                                      "[[1, 10.05], [2, 12.2], [3, 14.45], [4, 16.8]]}}"}));
  ExpectProfile(*after, t, Measured(4));

  const std::string flow = R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: chain}
spec:
  hardwareClasses: [{name: cpu}, {name: gpu}]
  tasks:
    - {name: a, variants: [{name: v, batchSize: {max: 3}, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {c: 5}}}]}]}
  paths: [{name: p, tasks: [a], sloMs: 100}]
)";
  auto added = SetProfileLatency(flow, {"a", "v", "gpu"}, Measured(3));
  ASSERT_TRUE(added.ok()) << added.error().message;
  EXPECT_NE(added->find("latencyMs: {quadratic: {c: 5}}}, {hardwareClass: gpu, latencyMs: "
                        "{points: [[1, 10.05], [2, 12.2], [3, 14.45]]}}]}]}"),
            std::string::npos)
      << *added;
  ExpectProfile(*added, {"a", "v", "gpu"}, Measured(3));
}

TEST(YamlEdit, JsonStaysJson) {
  const std::string before = R"({
  "apiVersion": "pipescale.io/v1alpha1", "kind": "InferencePipeline",
  "metadata": {"name": "p"},
  "spec": {
    "hardwareClasses": [{"name": "cpu"}, {"name": "gpu"}],
    "tasks": [{"name": "t", "variants": [{"name": "v", "batchSize": {"max": 3},
      "profiles": [{"hardwareClass": "cpu", "latencyMs": {"quadratic": {"c": 5}}}]}]}],
    "paths": [{"name": "p", "tasks": ["t"], "sloMs": 100}]
  }
}
)";
  auto replaced = SetProfileLatency(before, {"t", "v", "cpu"}, Measured(3));
  ASSERT_TRUE(replaced.ok()) << replaced.error().message;
  EXPECT_NE(
      replaced->find(R"("latencyMs": {"points": [[1, 10.05], [2, 12.2], [3, 14.45]]}}]}]}],)"),
      std::string::npos)
      << *replaced;
  auto added = SetProfileLatency(*replaced, {"t", "v", "gpu"}, Measured(3, FitModel::kTable));
  ASSERT_TRUE(added.ok()) << added.error().message;
  EXPECT_NE(added->find(R"(, {"hardwareClass": "gpu", "latencyMs": {"model": "table", "points": )"),
            std::string::npos)
      << *added;
  // Both are JSON that the parser reads as JSON (a document starting with '{').
  ExpectProfile(*added, {"t", "v", "cpu"}, Measured(3));
  ExpectProfile(*added, {"t", "v", "gpu"}, Measured(3, FitModel::kTable));
}

TEST(YamlEdit, WindowsLineEndingsStay) {
  std::string before = Example("mark-classify.yaml");
  std::string crlf;
  for (char c : before) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  const Target t{"classify", "inception-v3", "p2-xlarge"};
  auto after = SetProfileLatency(crlf, t, Measured(16));
  ASSERT_TRUE(after.ok()) << after.error().message;
  size_t lf = 0, pairs = 0;
  for (size_t i = 0; i < after->size(); ++i) {
    if ((*after)[i] != '\n') continue;
    ++lf;
    pairs += i > 0 && (*after)[i - 1] == '\r' ? 1 : 0;
  }
  EXPECT_EQ(lf, pairs);
  ExpectProfile(*after, t, Measured(16));
}

TEST(YamlEdit, SharedValuesAreNotEdited) {
  const std::string doc = R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: p}
spec:
  hardwareClasses: [{name: cpu}]
  tasks:
    - name: a
      next: [{task: b}]
      variants: [{name: v, batchSize: {max: 3}, profiles: [{hardwareClass: cpu, latencyMs: &same {quadratic: {c: 5}}}]}]
    - name: b
      variants: [{name: v, batchSize: {max: 3}, profiles: [{hardwareClass: cpu, latencyMs: *same}]}]
  paths: [{name: p, tasks: [a, b], sloMs: 100}]
)";
  ASSERT_TRUE(api::ParsePipeline(doc).pipeline);
  for (const char* task : {"a", "b"}) {
    auto edited = SetProfileLatency(doc, {task, "v", "cpu"}, Measured(3));
    ASSERT_FALSE(edited.ok()) << task;
    EXPECT_NE(edited.error().message.find("shared through a YAML anchor or alias"),
              std::string::npos)
        << edited.error().message;
  }
}

TEST(YamlEdit, AProfileThatDoesNotValidateIsRefused) {
  // A batch size whose latency is beyond what a pipeline may hold.
  const std::vector<MeasuredBatch> huge = {{.batch = 1, .summary = {.mean_ms = 1}},
                                           {.batch = 2, .summary = {.mean_ms = 4e6}}};
  auto edited =
      SetProfileLatency(Example("mark-classify.yaml"), {"classify", "inception-v3", "p2-xlarge"},
                        *MakeLatency(huge, Statistic::kMean, FitModel::kTable));
  ASSERT_FALSE(edited.ok());
  EXPECT_NE(
      edited.error().message.find("the measured profile does not validate: "
                                  "spec.tasks[0].variants[0].profiles[1].latencyMs.points[1]"),
      std::string::npos)
      << edited.error().message;
}

// Every example: each profile replaced in turn parses back with only that profile changed
// (SetProfileLatency checks it), for each style the examples use.
TEST(YamlEdit, EveryProfileOfEveryExample) {
  for (const char* name :
       {"fa2-cpu.yaml", "fa2-gpu.yaml", "profiled-chain.yaml", "loki-traffic.yaml",
        "loki-social.yaml", "kairos-rm2.yaml", "mark-classify.yaml"}) {
    const std::string text = Example(name);
    const api::ParsedPipeline parsed = api::ParsePipeline(text);
    ASSERT_TRUE(parsed.pipeline) << name;
    for (const model::Task& task : parsed.pipeline->spec.tasks) {
      for (const model::Variant& v : task.variants) {
        for (const model::Profile& p : v.profiles) {
          const Target t{task.name, v.name, p.hardware_class};
          const Latency latency = Measured(std::min(v.max_batch, 4));
          auto edited = SetProfileLatency(text, t, latency);
          ASSERT_TRUE(edited.ok())
              << name << " " << task.name << "/" << v.name << ": " << edited.error().message;
          ExpectProfile(*edited, t, latency);
        }
      }
    }
  }
}

}  // namespace
}  // namespace pipescale::profile
