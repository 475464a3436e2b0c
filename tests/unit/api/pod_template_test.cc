// A variant's pod template is user JSON the operator builds Deployments from: every shape
// BuildDeployment reads is checked where the spec is parsed, so a template either fails
// validation naming its field or builds a Deployment without throwing.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "api/deployment.h"
#include "api/document.h"
#include "api/pipeline_parse.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

// A class that sets everything BuildDeployment merges into a template: requests, limits, a
// node selector and tolerations.
constexpr const char* kPipeline = R"yaml(
apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: traffic}
spec:
  hardwareClasses:
    - name: gpu
      resources: {limits: {nvidia.com/gpu: 1}, requests: {cpu: "4"}}
      nodeSelector: {accelerator: t4}
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  tasks:
    - name: detect
      variants:
        - name: yolo
          profiles: [{hardwareClass: gpu, latencyMs: {quadratic: {a: 0, b: 3, c: 8}}}]
  paths: [{name: p, tasks: [detect], sloMs: 500}]
)yaml";

constexpr const char* kTemplatePath = "spec.tasks[0].variants[0].template";

// The pipeline with `pod_template` as its variant's template.
std::string WithTemplate(const json& pod_template) {
  json doc = *ParseDocument(kPipeline);
  doc["spec"]["tasks"][0]["variants"][0]["template"] = pod_template;
  return doc.dump();
}

std::vector<std::string> Errors(const ParsedPipeline& parsed) {
  std::vector<std::string> out;
  for (const auto& e : parsed.errors) out.push_back(e.ToString());
  return out;
}

std::string Dump(const std::vector<std::string>& errors) {
  std::string out;
  for (const auto& e : errors) out += "\n  " + e;
  return out;
}

// What BuildDeployment threw on every (variant, class) of the pipeline, or "".
std::string BuildThrows(const model::Pipeline& pipeline) {
  try {
    for (const model::Task& task : pipeline.spec.tasks) {
      for (const model::Variant& variant : task.variants) {
        for (const model::HardwareClass& hw : pipeline.spec.hardware_classes) {
          (void)BuildDeployment(pipeline, {}, task, variant, hw, 2, 8).dump();
        }
      }
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Each of these passed validation and then threw in BuildDeployment, so the operator retried
// the pipeline forever and its status never said InvalidSpec.
TEST(PodTemplate, ShapesBuildDeploymentReadsAreCheckedWhereTheSpecIsParsed) {
  const std::vector<std::pair<const char*, std::string>> cases = {
      {R"({"spec": 1})", ".spec: must be an object"},
      {R"({"metadata": []})", ".metadata: must be an object"},
      {R"({"metadata": {"labels": "app"}})", ".metadata.labels: must be an object"},
      {R"({"spec": {"containers": {"name": "model"}}})", ".spec.containers: must be a list"},
      {R"({"spec": {"containers": [1]}})", ".spec.containers[0]: must be an object"},
      {R"({"spec": {"containers": [{"env": {"A": "1"}}]}})",
       ".spec.containers[0].env: must be a list"},
      {R"({"spec": {"containers": [{"env": ["A=1"]}]}})",
       ".spec.containers[0].env[0]: must be an object"},
      {R"({"spec": {"containers": [{"env": [{"name": 5}]}]}})",
       ".spec.containers[0].env[0].name: must be a string"},
      {R"({"spec": {"containers": [{"resources": 1}]}})",
       ".spec.containers[0].resources: must be an object"},
      {R"({"spec": {"containers": [{"resources": {"limits": [1]}}]}})",
       ".spec.containers[0].resources.limits: must be an object"},
      {R"({"spec": {"containers": [{"resources": {"requests": "4"}}]}})",
       ".spec.containers[0].resources.requests: must be an object"},
      {R"({"spec": {"nodeSelector": "gpu"}})", ".spec.nodeSelector: must be an object"},
  };
  for (const auto& [pod_template, error] : cases) {
    const ParsedPipeline parsed = ParsePipeline(WithTemplate(json::parse(pod_template)));
    const std::vector<std::string> errors = Errors(parsed);
    const bool named =
        std::find(errors.begin(), errors.end(), kTemplatePath + error) != errors.end();
    EXPECT_TRUE(named) << pod_template << " gave:" << Dump(errors)
                       << (parsed.pipeline
                               ? "\n  and BuildDeployment threw: " + BuildThrows(*parsed.pipeline)
                               : "");
  }
}

TEST(PodTemplate, AValidTemplateKeepsWhatItSays) {
  const json pod_template = json::parse(R"({
      "metadata": {"labels": {"team": "vision"}, "annotations": {"a": "b"}},
      "spec": {"containers": [{"name": "model", "image": "example/yolo",
                               "env": [{"name": "MODE", "value": "fast"}, {"name": "MAX_BATCH_SIZE"}],
                               "resources": {"requests": {"memory": "1Gi"}}}],
               "nodeSelector": {"zone": "a"}}})");
  const ParsedPipeline parsed = ParsePipeline(WithTemplate(pod_template));
  ASSERT_TRUE(parsed.pipeline) << Dump(Errors(parsed));
  const model::Pipeline& p = *parsed.pipeline;
  const json d = BuildDeployment(p, {}, p.spec.tasks[0], p.spec.tasks[0].variants[0],
                                 p.spec.hardware_classes[0], 2, 8);
  const json& pod = d["spec"]["template"];
  EXPECT_EQ(pod["metadata"]["labels"]["team"], "vision");
  EXPECT_EQ(pod["metadata"]["labels"]["pipescale.io/task"], "detect");
  EXPECT_EQ(pod["metadata"]["annotations"]["a"], "b");
  const json& container = pod["spec"]["containers"][0];
  EXPECT_EQ(container["image"], "example/yolo");
  EXPECT_EQ(container["resources"]["requests"]["memory"], "1Gi");
  EXPECT_EQ(container["resources"]["requests"]["cpu"], "4");
  EXPECT_EQ(container["resources"]["limits"]["nvidia.com/gpu"], "1");
  EXPECT_EQ(pod["spec"]["nodeSelector"], json({{"zone", "a"}, {"accelerator", "t4"}}));
  EXPECT_EQ(pod["spec"]["tolerations"][0]["key"], "nvidia.com/gpu");
  const json env = container["env"];
  const auto value_of = [&](const std::string& name) {
    for (const json& e : env) {
      if (e["name"] == name) return e.value("value", "");
    }
    return std::string("(absent)");
  };
  EXPECT_EQ(value_of("MODE"), "fast");
  EXPECT_EQ(value_of("MAX_BATCH_SIZE"), "8");
  EXPECT_EQ(value_of("PIPESCALE_VARIANT"), "yolo");
}

// --- Mutated templates: a field-named error, or a Deployment built without throwing ---

// Every value in `j`, by JSON pointer.
void Pointers(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  out.push_back(at);
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) Pointers(value, at / key, out);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) Pointers(j[i], at / i, out);
  }
}

// A value of another shape than a template usually holds there.
json Replacement(std::mt19937& rng) {
  static const std::vector<json> kValues = [] {
    std::vector<json> out;
    for (const char* v : {"null", "1", "-1.5", "true", "\"x\"", "[]", "[1]", "[\"a\", \"b\"]", "{}",
                          "{\"name\": 5}", "{\"name\": \"MAX_BATCH_SIZE\"}", "[{}]", "[[]]",
                          "{\"containers\": 1}", "{\"labels\": \"x\"}", "{\"env\": {}}"}) {
      out.push_back(json::parse(v));
    }
    return out;
  }();
  return kValues[rng() % kValues.size()];
}

// One to three edits: a value replaced, a member or item removed, or one added.
json Mutate(json t, std::mt19937& rng) {
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits; ++e) {
    std::vector<json::json_pointer> pointers;
    Pointers(t, json::json_pointer(), pointers);
    const json::json_pointer at = pointers[rng() % pointers.size()];
    const int kind = static_cast<int>(rng() % 3);
    if (at.empty() && kind != 2) continue;  // the template itself stays an object
    if (kind == 0) {
      t[at] = Replacement(rng);
    } else if (kind == 1) {
      json& parent = t[at.parent_pointer()];
      if (parent.is_object()) {
        parent.erase(at.back());
      } else {
        parent.erase(std::stoul(at.back()));
      }
    } else if (t[at].is_object()) {
      static const char* const kKeys[] = {"metadata", "labels",      "spec",      "containers",
                                          "env",      "name",        "resources", "requests",
                                          "limits",   "nodeSelector"};
      t[at][kKeys[rng() % std::size(kKeys)]] = Replacement(rng);
    } else if (t[at].is_array()) {
      t[at].push_back(Replacement(rng));
    }
  }
  return t;
}

TEST(PodTemplate, MutatedTemplatesFailWithTheirFieldOrBuild) {
  const json seed = json::parse(R"({
      "metadata": {"labels": {"team": "vision"}},
      "spec": {"containers": [{"name": "model", "image": "example/yolo",
                               "env": [{"name": "MODE", "value": "fast"}],
                               "resources": {"requests": {"memory": "1Gi"}, "limits": {}}},
                              {"name": "sidecar"}],
               "nodeSelector": {"zone": "a"}, "tolerations": []}})");
  std::mt19937 rng(20240044);
  int invalid = 0, valid = 0;
  for (int i = 0; i < 2000; ++i) {
    const json pod_template = Mutate(seed, rng);
    const ParsedPipeline parsed = ParsePipeline(WithTemplate(pod_template));
    if (!parsed.pipeline) {
      ++invalid;
      const bool named =
          std::any_of(parsed.errors.begin(), parsed.errors.end(),
                      [](const FieldError& e) { return e.path.rfind(kTemplatePath, 0) == 0; });
      EXPECT_TRUE(named) << pod_template.dump() << Dump(Errors(parsed));
      continue;
    }
    ++valid;
    EXPECT_EQ(BuildThrows(*parsed.pipeline), "") << pod_template.dump();
  }
  // Both outcomes are exercised.
  EXPECT_GT(invalid, 100);
  EXPECT_GT(valid, 100);
}

}  // namespace
}  // namespace pipescale::api
