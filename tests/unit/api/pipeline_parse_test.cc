#include "api/pipeline_parse.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace pipescale::api {
namespace {

constexpr const char* kValid = R"yaml(
apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: traffic, namespace: vision}
spec:
  optimizer: fa2
  mode: Recommend
  interval: 15s
  hardwareClasses:
    - name: gpu-t4
      resources: {limits: {nvidia.com/gpu: 1}, requests: {cpu: "4", memory: 16Gi}}
      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-tesla-t4}
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      costPerHour: 0.526
      startupSeconds: 60
      maxReplicas: 20
  tasks:
    - name: detect
      next: [{task: classify, ratio: 1.0}]
      variants:
        - name: yolov5x
          accuracy: 0.95
          batchSize: {env: MAX_BATCH_SIZE, max: 64}
          template: {spec: {containers: [{name: model, image: example/yolo}]}}
          profiles:
            - hardwareClass: gpu-t4
              latencyMs: {quadratic: {a: 0.02, b: 3.1, c: 8.0}}
    - name: classify
      variants:
        - name: effnet
          accuracy: 0.9
          profiles:
            - hardwareClass: gpu-t4
              latencyMs: {points: [[1, 9.5], [8, 30.2], [16, 55.0]], model: table}
  paths:
    - {name: car-qa, tasks: [detect, classify], sloMs: 250, weight: 2}
  slo: {latencyMs: 250, percentile: 99}
  budget: {maxReplicas: 20, costPerHour: 2.5}
  metrics: {prometheusURL: "http://prom:9090", arrivalRate: "sum(rate(x[1m]))"}
  forecast: {method: ewma, horizon: 5m}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 300}
)yaml";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

std::vector<std::string> Errors(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& e : ParsePipeline(text).errors) out.push_back(e.ToString());
  return out;
}

bool Has(const std::vector<std::string>& errors, const std::string& wanted) {
  return std::find(errors.begin(), errors.end(), wanted) != errors.end();
}

std::string Dump(const std::vector<std::string>& errors) {
  std::string out;
  for (const auto& e : errors) out += "\n  " + e;
  return out;
}

TEST(ParsePipeline, ReadsEveryField) {
  const ParsedPipeline parsed = ParsePipeline(kValid);
  ASSERT_TRUE(parsed.errors.empty()) << parsed.errors[0].ToString();
  const model::Pipeline& p = *parsed.pipeline;
  EXPECT_EQ(p.name, "traffic");
  EXPECT_EQ(p.namespace_name, "vision");
  EXPECT_EQ(p.spec.mode, model::Mode::kRecommend);
  EXPECT_DOUBLE_EQ(p.spec.interval_seconds, 15);
  const auto& hw = p.spec.hardware_classes.at(0);
  EXPECT_EQ(hw.limits.at("nvidia.com/gpu"), "1");
  EXPECT_EQ(hw.requests.at("memory"), "16Gi");
  EXPECT_EQ(hw.node_selector.at("cloud.google.com/gke-accelerator"), "nvidia-tesla-t4");
  EXPECT_NE(hw.tolerations_json.find("NoSchedule"), std::string::npos);
  EXPECT_EQ(hw.max_replicas, 20);
  const auto& detect = p.spec.tasks.at(0);
  EXPECT_EQ(detect.next.at(0).task, "classify");
  EXPECT_EQ(detect.variants.at(0).max_batch, 64);
  EXPECT_NE(detect.variants.at(0).template_json.find("example/yolo"), std::string::npos);
  EXPECT_DOUBLE_EQ(detect.variants.at(0).profiles.at(0).latency.Ms(2), 0.08 + 6.2 + 8.0);
  const auto& table = p.spec.tasks.at(1).variants.at(0).profiles.at(0).latency;
  EXPECT_EQ(table.kind, model::LatencyProfile::Kind::kTable);
  EXPECT_EQ(table.MaxBatch(32), 16);
  EXPECT_DOUBLE_EQ(p.spec.paths.at(0).weight, 2);
  EXPECT_EQ(p.spec.budget.max_replicas, 20);
  EXPECT_EQ(p.spec.metrics.queries.at("arrivalRate"), "sum(rate(x[1m]))");
  EXPECT_EQ(p.spec.forecast.method, model::ForecastMethod::kEwma);
  EXPECT_DOUBLE_EQ(p.spec.forecast.horizon_seconds, 300);
}

TEST(ParsePipeline, JsonAndYamlGiveTheSameModel) {
  constexpr const char* kJson = R"({"apiVersion": "pipescale.io/v1alpha1",
    "kind": "InferencePipeline", "metadata": {"name": "j"},
    "spec": {"hardwareClasses": [{"name": "cpu", "costPerHour": 0.1}],
             "tasks": [{"name": "a", "variants": [{"name": "v",
               "profiles": [{"hardwareClass": "cpu", "latencyMs": {"quadratic": {"a": 0, "b": 2, "c": 5}}}]}]}],
             "paths": [{"name": "p", "tasks": ["a"], "sloMs": 100}]}})";
  constexpr const char* kYaml = R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: j}
spec:
  hardwareClasses: [{name: cpu, costPerHour: 0.1}]
  tasks: [{name: a, variants: [{name: v, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {a: 0, b: 2, c: 5}}}]}]}]
  paths: [{name: p, tasks: [a], sloMs: 100}]
)";
  const auto from_json = ParsePipeline(kJson);
  const auto from_yaml = ParsePipeline(kYaml);
  ASSERT_TRUE(from_json.pipeline && from_yaml.pipeline);
  EXPECT_EQ(*from_json.pipeline, *from_yaml.pipeline);
}

TEST(ParsePipeline, UnknownNextTaskNamesTheField) {
  const auto errors = Errors(Replace(kValid, "task: classify, ratio", "task: clasify, ratio"));
  EXPECT_TRUE(Has(errors, "spec.tasks[0].next[0].task: unknown task \"clasify\"")) << Dump(errors);
}

TEST(ParsePipeline, ReportsEveryErrorAtOnce) {
  std::string text = Replace(kValid, "sloMs: 250", "sloMs: -5");
  text = Replace(text, "accuracy: 0.95", "accuracy: 1.5");
  text = Replace(text, "hardwareClass: gpu-t4\n              latencyMs: {quadratic",
                 "hardwareClass: gpu-a100\n              latencyMs: {quadratic");
  text = Replace(text, "method: ewma", "method: lstm");
  const auto errors = Errors(text);
  EXPECT_TRUE(Has(errors, "spec.paths[0].sloMs: must be > 0, got -5")) << Dump(errors);
  EXPECT_TRUE(Has(errors, "spec.tasks[0].variants[0].accuracy: must be in (0, 1], got 1.5"));
  EXPECT_TRUE(Has(errors,
                  "spec.tasks[0].variants[0].profiles[0].hardwareClass: unknown hardware class "
                  "\"gpu-a100\""));
  EXPECT_TRUE(Has(errors,
                  "spec.forecast.method: must be one of none, ewma, holtWinters, linear, "
                  "got \"lstm\""));
  EXPECT_EQ(errors.size(), 4u) << Dump(errors);
}

TEST(ParsePipeline, CycleIsNamed) {
  const auto errors = Errors(Replace(kValid, "    - name: classify\n      variants:",
                                     "    - name: classify\n      next: [{task: detect}]\n"
                                     "      variants:"));
  EXPECT_TRUE(Has(errors,
                  "spec.tasks[1].next[0]: edge closes a cycle: detect -> classify -> "
                  "detect"))
      << Dump(errors);
}

TEST(ParsePipeline, PathMustFollowEdges) {
  const auto errors =
      Errors(Replace(kValid, "tasks: [detect, classify]", "tasks: [classify, detect]"));
  EXPECT_TRUE(Has(errors,
                  "spec.paths[0].tasks[1]: task \"detect\" does not follow \"classify\": "
                  "no edge classify -> detect in spec.tasks"))
      << Dump(errors);
}

TEST(ParsePipeline, DuplicatesAndMissingProfiles) {
  std::string text = Replace(kValid, "- name: classify\n", "- name: detect\n");
  const auto errors = Errors(text);
  EXPECT_TRUE(Has(errors, "spec.tasks[1].name: duplicate task \"detect\"")) << Dump(errors);

  const auto no_profiles = Errors(Replace(
      kValid, "profiles:\n            - hardwareClass: gpu-t4\n              latencyMs: {points",
      "profiles: []\n          unused:\n            - hardwareClass: gpu-t4\n"
      "              latencyMs: {points"));
  EXPECT_TRUE(Has(no_profiles,
                  "spec.tasks[1].variants[0].profiles: no latency profile; add one "
                  "per hardware class the variant may run on"))
      << Dump(no_profiles);
}

TEST(ParsePipeline, NonPositiveLatencyAndTypos) {
  const auto negative = Errors(Replace(kValid, "{a: 0.02, b: 3.1, c: 8.0}", "{a: 0, b: -3, c: 8}"));
  EXPECT_TRUE(Has(negative,
                  "spec.tasks[0].variants[0].profiles[0].latencyMs: latency at batch "
                  "size 3 is -1 ms; it must be > 0 for every batch size up to 64"))
      << Dump(negative);
  const auto typo = Errors(Replace(kValid, "sloMs: 250, weight", "sloms: 250, weight"));
  EXPECT_TRUE(Has(typo, "spec.paths[0].sloMs: required")) << Dump(typo);
  EXPECT_TRUE(Has(typo,
                  "spec.paths[0].sloms: unknown field; known fields: name, tasks, sloMs, "
                  "weight"));
  const auto quoted = Errors(Replace(kValid, "costPerHour: 0.526", "costPerHour: \"0.526\""));
  EXPECT_TRUE(Has(quoted, "spec.hardwareClasses[0].costPerHour: must be a number"));
}

TEST(ParsePipeline, FitsPointsAndRejectsTooFewForAQuadratic) {
  const auto fitted =
      ParsePipeline(Replace(kValid, "[16, 55.0]], model: table}", "[16, 55.0], [4, 17.9]]}"));
  ASSERT_TRUE(fitted.pipeline) << fitted.errors[0].ToString();
  const auto& lat = fitted.pipeline->spec.tasks[1].variants[0].profiles[0].latency;
  EXPECT_TRUE(lat.fitted);
  EXPECT_EQ(lat.kind, model::LatencyProfile::Kind::kQuadratic);
  EXPECT_LT(lat.fit.rmse_ms, 1.0);

  const auto errors = Errors(Replace(kValid, "[[1, 9.5], [8, 30.2], [16, 55.0]], model: table",
                                     "[[1, 9.5], [8, 30.2]], model: quadratic"));
  EXPECT_TRUE(Has(errors,
                  "spec.tasks[1].variants[0].profiles[0].latencyMs.points: a quadratic fit "
                  "needs points at 3 or more distinct batch sizes, got 2; add points or "
                  "set model: table"))
      << Dump(errors);
}

TEST(ParsePipeline, SyntaxErrorsCarryTheLine) {
  const auto errors = Errors("apiVersion: pipescale.io/v1alpha1\nkind: [unclosed\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("invalid YAML: line"), std::string::npos) << errors[0];
}

TEST(ParsePipeline, Fa2NeedsPaths) {
  const auto errors = Errors(Replace(
      kValid, "  paths:\n    - {name: car-qa, tasks: [detect, classify], sloMs: 250, weight: 2}\n",
      ""));
  EXPECT_TRUE(Has(errors,
                  "spec.paths: the fa2 optimizer needs at least one execution path with "
                  "sloMs"))
      << Dump(errors);
}

TEST(ParsePipeline, ExamplesAreValid) {
  for (const char* f : {"fa2-cpu.yaml", "fa2-gpu.yaml", "profiled-chain.yaml"}) {
    const auto parsed =
        ParsePipelineFile(std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/" + f);
    EXPECT_TRUE(parsed.errors.empty()) << f << ": " << parsed.errors[0].ToString();
  }
  const auto missing = ParsePipelineFile("/nonexistent.yaml");
  ASSERT_EQ(missing.errors.size(), 1u);
  EXPECT_EQ(missing.errors[0].ToString(), "cannot read /nonexistent.yaml");
}

TEST(ParsePipeline, PoolOptimizersReadQuerySizesAndBurstClasses) {
  std::string text = Replace(kValid, "optimizer: fa2", "optimizer: kairos");
  text = Replace(text, "      maxReplicas: 20\n",
                 "      maxReplicas: 20\n    - name: spot\n      burst: {minWarm: 2}\n");
  text = Replace(text, "  forecast:",
                 "  querySizes: [{size: 1, weight: 3}, {size: 8, weight: 1}]\n  forecast:");
  const ParsedPipeline parsed = ParsePipeline(text);
  ASSERT_TRUE(parsed.errors.empty()) << Dump(Errors(text));
  const model::PipelineSpec& spec = parsed.pipeline->spec;
  ASSERT_EQ(spec.query_sizes.size(), 2u);
  EXPECT_EQ(spec.query_sizes[1].size, 8);
  EXPECT_DOUBLE_EQ(spec.query_sizes[0].weight, 3);
  EXPECT_FALSE(spec.hardware_classes[0].burst_min_warm.has_value());
  EXPECT_EQ(spec.hardware_classes[1].burst_min_warm, 2);
}

TEST(ParsePipeline, PoolOptimizersNameWhatIsWrong) {
  const std::string kairos = Replace(kValid, "optimizer: fa2", "optimizer: kairos");
  auto errors = Errors(Replace(kairos, "  forecast:",
                               "  querySizes: [{size: 0, weight: 1}, {size: 4}, {size: 4, "
                               "weight: 1}, {size: 128, weight: 1}]\n  forecast:"));
  EXPECT_TRUE(Has(errors, "spec.querySizes[0].size: must be >= 1, got 0")) << Dump(errors);
  EXPECT_TRUE(Has(errors, "spec.querySizes[1].weight: required")) << Dump(errors);
  EXPECT_TRUE(Has(errors, "spec.querySizes[2].size: duplicate query size 4")) << Dump(errors);
  EXPECT_TRUE(Has(errors,
                  "spec.querySizes: query size 128 exceeds the batch \"yolov5x\" of task "
                  "\"detect\" accepts (batchSize.max 64)"))
      << Dump(errors);
  // Only burst classes for a task: nothing would serve it.
  errors = Errors(Replace(kairos, "      maxReplicas: 20\n", "      burst: {minWarm: -1}\n"));
  EXPECT_TRUE(Has(errors, "spec.hardwareClasses[0].burst.minWarm: must be >= 0, got -1"))
      << Dump(errors);
  errors = Errors(Replace(kairos, "      maxReplicas: 20\n", "      burst: {}\n"));
  EXPECT_TRUE(Has(errors,
                  "spec.tasks[0].variants: variant \"yolov5x\" of task \"detect\" has a "
                  "profile only on burst classes; kairos needs one on a main class"))
      << Dump(errors);
  // Kairos and MArk split path SLOs over tasks: they need paths.
  errors = Errors(
      Replace(Replace(kValid, "optimizer: fa2", "optimizer: mark"),
              "    - {name: car-qa, tasks: [detect, classify], sloMs: 250, weight: 2}\n", ""));
  EXPECT_TRUE(
      Has(errors, "spec.paths: the mark optimizer needs at least one execution path with sloMs"))
      << Dump(errors);
}

}  // namespace
}  // namespace pipescale::api
