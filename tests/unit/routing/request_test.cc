// Parsing Open Inference Protocol requests at the router's front door: what passes, what
// each malformed request is told (the field and the reason), and that no input crashes it.
#include "routing/request.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "api/pipeline_parse.h"
#include "support/mutate.h"

namespace pipescale::router {
namespace {

constexpr const char* kValid =
    R"({"id": "r1", "parameters": {"pipescale_path": "cars"},
        "inputs": [{"name": "image", "datatype": "FP32", "shape": [2, 3], "data": [[1, 2, 3], [4, 5, 6]]}],
        "outputs": [{"name": "boxes"}]})";

TEST(InferRequest, AValidRequestKeepsItsBodyIdPathAndQuerySize) {
  auto r = ParseInferRequest(kValid, "");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->id, "r1");
  EXPECT_EQ(r->path, "cars");
  EXPECT_EQ(r->query_size, 2);
  // What goes on is the request as sent, the router's own parameters written in instead of
  // any the client set.
  nlohmann::json expected = nlohmann::json::parse(kValid);
  expected["parameters"].erase("pipescale_path");
  expected["parameters"]["pipescale_deadline_ms"] = 250;
  EXPECT_EQ(nlohmann::json::parse(r->body.Render({{kDeadlineParameter, "250"}})), expected);
}

TEST(InferRequest, TheHeaderNamesThePathBeforeTheParameter) {
  auto r = ParseInferRequest(kValid, "faces");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->path, "faces");
}

TEST(InferRequest, EachMistakeNamesItsField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "body: is not JSON"},
      {"[1]", "body: must be a JSON object"},
      {R"({"inputs": []})", "inputs: must be a non-empty array"},
      {R"({"id": 3, "inputs": []})", "id: must be a string"},
      {R"({"inputs": [{"datatype": "FP32", "shape": [1], "data": [1]}]})", "inputs[0].name"},
      {R"({"inputs": [{"name": "x", "datatype": "FLOAT", "shape": [1], "data": [1]}]})",
       "inputs[0].datatype"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1], "data": [1]}]})",
       "inputs[0].shape"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [3], "data": [1, 2]}]})",
       "inputs[0].data: holds 2 elements, the shape says 3"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [{"a": 1}]}]})",
       "inputs[0].data: must hold only"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1]}],
           "parameters": {"pipescale_path": 7}})",
       "parameters.pipescale_path"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [4194304, 4194304], "data": []}]})",
       "inputs[0].shape: holds more than"},
      {R"({"outputs": {}, "inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1]}]})",
       "outputs: must be an array"},
      // A lone surrogate escape names no character: refused, not decoded into a crash.
      {R"({"id": "\ud800", "inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1]}]})",
       "body: is not JSON"},
  };
  for (const auto& [body, expected] : cases) {
    auto r = ParseInferRequest(body, "");
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalid);
    EXPECT_NE(r.error().message.find(expected), std::string::npos)
        << body << " said: " << r.error().message;
  }
}

TEST(InferRequest, DeepNestingIsRefusedBeforeItCostsMuch) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto r = ParseInferRequest(deep, "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nested deeper"), std::string::npos);
}

TEST(InferRequest, ErrorBodiesAreTheProtocolsShape) {
  EXPECT_EQ(nlohmann::json::parse(ErrorBody("no \"path\"")),
            (nlohmann::json{{"error", "no \"path\""}}));
}

// Mutations of valid requests (bytes flipped, cut, duplicated): never a crash, and every
// answer is a value or an error that says which field.
TEST(InferRequest, FuzzedRequestsNeverCrash) {
  std::mt19937 rng(12);
  const std::string seed = kValid;
  int errors = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string s =
        testing::Mutate(seed, rng, 8, [&] { return static_cast<char>(rng() % 256); });
    auto r = ParseInferRequest(s, "");
    if (!r.ok()) {
      ++errors;
      EXPECT_NE(r.error().message.find(": "), std::string::npos) << r.error().message;
    }
  }
  EXPECT_GT(errors, 1000);  // the mutations did reach the error paths
}

// Kairos plans a bucket's queries at its upper bound: the buckets cover every size a spec may
// name, and no query lands in a bucket whose bound is more than a third above its size.
TEST(QuerySizeBounds, CoverEveryBatchWithinAThird) {
  const std::vector<double> bounds = QuerySizeBounds();
  ASSERT_FALSE(bounds.empty());
  EXPECT_EQ(bounds.front(), 1);
  EXPECT_EQ(bounds.back(), api::limits::kMaxBatch);
  for (int size = 1; size <= api::limits::kMaxBatch; ++size) {
    const double bound = *std::lower_bound(bounds.begin(), bounds.end(), size);
    EXPECT_LE(bound, size * 4.0 / 3) << size;
  }
}

}  // namespace
}  // namespace pipescale::router
