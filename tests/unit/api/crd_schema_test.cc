// The CRD teaches the API: `kubectl explain` shows each field's description, so every field of
// the schema, spec and status, must have one; and the schema's declared shapes must match what
// the operator writes into status (a declared object prunes the fields it does not list).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

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
  Undescribed(Schema(), "inferencepipeline", missing);
  std::string list;
  for (const std::string& m : missing) list += "\n  " + m;
  EXPECT_TRUE(missing.empty()) << missing.size() << " fields without a description:" << list;
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

TEST(CrdSchema, StatusIsAnObjectThatKeepsWhatTheOperatorWrites) {
  const YAML::Node status = Schema()["properties"]["status"];
  EXPECT_EQ(status["type"].as<std::string>(), "object");
  // Objects whose fields the operator extends per optimizer must not be pruned.
  for (const char* open : {"plan", "solver", "observed", "memory"}) {
    EXPECT_TRUE(status["properties"][open]["x-kubernetes-preserve-unknown-fields"].as<bool>(false))
        << "status." << open;
  }
}

}  // namespace
