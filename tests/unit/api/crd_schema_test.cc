// The CRD teaches the API: `kubectl explain` shows each field's description, so every field of
// the schema, spec and status, must have one; and the schema's declared shapes must match what
// the operator writes into status (a declared object prunes the fields it does not list).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/pipeline_parse.h"
#include "api/plan_json.h"
#include "api/status_json.h"
#include "api/workload.h"
#include "optimizer/registry.h"
#include "unit/api/status_samples.h"

namespace pipescale {
namespace {

YAML::Node Schema() {
  const YAML::Node crd = YAML::LoadFile(std::string(PIPESCALE_SOURCE_DIR) +
                                        "/crds/pipescale.io_inferencepipelines.yaml");
  return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
}

// Every schema node under `node` at `path` without a description, or with one too short to
// say anything.
void Undescribed(const YAML::Node& node, const std::string& path, std::vector<std::string>& out) {
  const YAML::Node description = node["description"];
  if (!description || description.as<std::string>().size() < 3) out.push_back(path);
  if (const YAML::Node properties = node["properties"]) {
    for (const auto& p : properties) {
      Undescribed(p.second, path + "." + p.first.as<std::string>(), out);
    }
  }
  if (const YAML::Node items = node["items"]; items && items.IsMap()) {
    Undescribed(items, path + "[]", out);
  }
}

TEST(CrdSchema, EveryFieldHasADescription) {
  std::vector<std::string> missing;
  YAML::Node schema = Schema();
  // The apiserver forbids anything but a type on metadata (kubectl explain shows ObjectMeta's).
  schema["properties"].remove("metadata");
  Undescribed(schema, "inferencepipeline", missing);
  std::string list;
  for (const std::string& m : missing) list += "\n  " + m;
  EXPECT_TRUE(missing.empty()) << missing.size() << " fields without a description:" << list;
}

// The apiserver refuses an optimizer the enum lacks before the operator ever sees it: the enum
// must list exactly what the registry plans for in a spec, in its order.
TEST(CrdSchema, TheOptimizerEnumIsTheRegistrysSpecNames) {
  std::vector<std::string> in_crd;
  for (const auto& name : Schema()["properties"]["spec"]["properties"]["optimizer"]["enum"]) {
    in_crd.push_back(name.as<std::string>());
  }
  std::vector<std::string> in_registry;
  for (const optimizer::Descriptor& d : optimizer::Optimizers()) {
    if (d.in_spec) in_registry.emplace_back(d.name);
  }
  EXPECT_EQ(in_crd, in_registry);
}

// The walk must be able to fail: it visits properties, array items and nested arrays.
TEST(CrdSchema, TheWalkFindsAFieldWithoutADescription) {
  const YAML::Node schema = YAML::Load(R"(
description: top
properties:
  a: {type: string, description: fine}
  b:
    type: array
    description: list
    items:
      type: array
      description: pair
      items: {type: number}
)");
  std::vector<std::string> missing;
  Undescribed(schema, "x", missing);
  EXPECT_EQ(missing, std::vector<std::string>{"x.b[][]"});
}

// Where `value` does not fit `schema`: a key the schema does not declare (the apiserver would
// prune it, and every reconcile would then write the status again) or a type it refuses.
void Misfits(const nlohmann::json& value, const YAML::Node& schema, const std::string& path,
             std::vector<std::string>& out) {
  if (schema["x-kubernetes-preserve-unknown-fields"].as<bool>(false)) return;
  const std::string type = schema["type"].as<std::string>("");
  const bool fits =
      (type == "object" && value.is_object()) || (type == "array" && value.is_array()) ||
      (type == "string" && value.is_string()) || (type == "boolean" && value.is_boolean()) ||
      (type == "integer" && value.is_number_integer()) || (type == "number" && value.is_number());
  if (!fits) {
    out.push_back(path + ": " + std::string(value.type_name()) + " where the schema says " + type);
    return;
  }
  if (value.is_array()) {
    for (const auto& item : value) Misfits(item, schema["items"], path + "[]", out);
  }
  if (!value.is_object()) return;
  const YAML::Node properties = schema["properties"];  // absent where additionalProperties is
  for (const auto& [key, v] : value.items()) {
    if (properties && properties[key]) {
      Misfits(v, properties[key], path + "." + key, out);
    } else if (const YAML::Node any = schema["additionalProperties"]) {
      Misfits(v, any, path + "." + key, out);
    } else {
      out.push_back(path + "." + key + ": not in the schema");
    }
  }
}

// Every optimizer's plan of every example, at a light and an overloading rate, as status.plan
// holds it (the status writer: PlanToJsonValue plus each task's Deployment), fits the schema.
TEST(CrdSchema, StatusPlanDeclaresWhatEveryOptimizerWrites) {
  const YAML::Node plan = Schema()["properties"]["status"]["properties"]["plan"];
  int plans = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(PIPESCALE_SOURCE_DIR) +
                                                               "/deploy/examples")) {
    const api::ParsedPipeline parsed = api::ParsePipelineFile(entry.path().string());
    ASSERT_TRUE(parsed.pipeline) << entry.path();
    for (double rps : {5.0, 5000.0}) {
      auto workload = api::MakeWorkload(*parsed.pipeline, rps, {});
      ASSERT_TRUE(workload.ok()) << workload.error().message;
      const model::Plan p = optimizer::Solve(*parsed.pipeline, *workload,
                                             optimizer::OptimizerOf(parsed.pipeline->spec).name);
      const model::AppliedPlan applied{
          .plan = p, .deployments = std::vector<std::string>(p.tasks.size(), "d")};
      const nlohmann::json status = api::StatusToJson({.plan = applied})["plan"];
      std::vector<std::string> misfits;
      Misfits(status, plan, "status.plan", misfits);
      std::string list;
      for (const std::string& m : misfits) list += "\n  " + m;
      EXPECT_TRUE(misfits.empty()) << entry.path().filename() << " at " << rps << " rps:" << list;
      ++plans;
    }
  }
  EXPECT_GE(plans, 8);
}

// The rest of the status as the operator writes it, over varied statuses, fits the schema too.
TEST(CrdSchema, StatusDeclaresEverythingTheWriterWrites) {
  const YAML::Node schema = Schema()["properties"]["status"];
  testing::StatusSampler sampler(3);
  for (int i = 0; i < 200; ++i) {
    const nlohmann::json status = api::StatusToJson(sampler.Next());
    std::vector<std::string> misfits;
    Misfits(status, schema, "status", misfits);
    std::string list;
    for (const std::string& m : misfits) list += "\n  " + m;
    EXPECT_TRUE(misfits.empty()) << status.dump() << list;
  }
}

TEST(CrdSchema, TheFitCheckFindsUndeclaredKeysAndWrongTypes) {
  const YAML::Node schema = YAML::Load(R"(
type: object
properties:
  n: {type: integer}
  list: {type: array, items: {type: object, properties: {a: {type: string}}}}
  open: {type: object, x-kubernetes-preserve-unknown-fields: true}
)");
  std::vector<std::string> misfits;
  Misfits(nlohmann::json::parse(R"({"n": 1.5, "list": [{"a": "x", "b": 1}], "open": {"z": 1}})"),
          schema, "s", misfits);
  EXPECT_EQ(misfits, (std::vector<std::string>{"s.list[].b: not in the schema",
                                               "s.n: number where the schema says integer"}));
}

TEST(CrdSchema, StatusIsAnObject) {
  EXPECT_EQ(Schema()["properties"]["status"]["type"].as<std::string>(), "object");
}

}  // namespace
}  // namespace pipescale
