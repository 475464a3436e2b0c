// Parsing Open Inference Protocol requests at the router's front door: what passes, what
// each malformed request is told (the field and the reason), and that no input crashes it.
#include "routing/request.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

#include "api/pipeline_parse.h"
#include "support/mutate.h"
#include "support/text.h"

namespace pipescale::routing {
namespace {

constexpr const char* kValid =
    R"({"id": "r1", "parameters": {"pipescale_path": "cars"},
        "inputs": [{"name": "image", "datatype": "FP32", "shape": [2, 3], "data": [[1, 2, 3], [4, 5, 6]]}],
        "outputs": [{"name": "boxes"}]})";

TEST(InferRequest, AValidRequestKeepsItsBodyIdPathAndQuerySize) {
  auto r = ParseInferRequest(kValid);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->id, "r1");
  EXPECT_EQ(r->path, "cars");
  EXPECT_EQ(r->query_size, 2);
  // What goes on is the request as sent, the router's own parameters written in instead of
  // any the client set.
  nlohmann::json expected = nlohmann::json::parse(kValid);
  expected["parameters"].erase("pipescale_path");
  expected["parameters"]["pipescale_deadline_ms"] = 250;
  EXPECT_EQ(nlohmann::json::parse(r->body.Render({{kDeadlineParameter, "250"}}).Joined()),
            expected);
}

TEST(InferRequest, TheHeaderNamesThePathBeforeTheParameter) {
  auto r = ParseInferRequest(kValid, {.path = "faces"});
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
    auto r = ParseInferRequest(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalid);
    EXPECT_NE(r.error().message.find(expected), std::string::npos)
        << body << " said: " << r.error().message;
  }
}

TEST(InferRequest, DeepNestingIsRefusedBeforeItCostsMuch) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto r = ParseInferRequest(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nested deeper"), std::string::npos);
}

TEST(InferRequest, ErrorBodiesAreTheProtocolsShape) {
  EXPECT_EQ(nlohmann::json::parse(ErrorBody("no \"path\"")),
            (nlohmann::json{{"error", "no \"path\""}}));
}

// A message may carry a model pod's own error body, whose bytes are whatever the pod sent: the
// body stays valid JSON (bad bytes replaced) instead of throwing, which made the client's 502 a
// 500 counted as a panic.
TEST(InferRequest, ErrorBodiesOfBytesThatAreNotUtf8AreValidJson) {
  const std::string message = "task detect failed: HTTP 500: \xff\xfe ok \xc3(";
  std::string body;
  ASSERT_NO_THROW(body = ErrorBody(message));
  const auto parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(parsed.is_object()) << body;
  const std::string error = parsed.value("error", "");
  EXPECT_EQ(error.rfind("task detect failed: HTTP 500: ", 0), 0u) << error;
  EXPECT_NE(error.find(" ok "), std::string::npos) << error;
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
    auto r = ParseInferRequest(s);
    if (!r.ok()) {
      ++errors;
      EXPECT_NE(r.error().message.find(": "), std::string::npos) << r.error().message;
    }
  }
  EXPECT_GT(errors, 1000);  // the mutations did reach the error paths
}

// The binary data extension: two tensors in the binary part (FP32 [2, 2] takes 16 bytes, BYTES
// at least 4 a element), one in JSON.
constexpr const char* kBinaryJson =
    R"({"inputs": [{"name": "a", "datatype": "FP32", "shape": [2, 2],)"
    R"( "parameters": {"binary_data_size": 16}},)"
    R"( {"name": "b", "datatype": "BYTES", "shape": [1], "parameters": {"binary_data_size": 7}},)"
    R"( {"name": "c", "datatype": "INT8", "shape": [1], "data": [1]}]})";
const std::string kBinaryPart(23, '\xff');  // no byte of it is read: 0xff is never JSON

TEST(InferRequest, ABinaryBodyIsCheckedByItsSizesAndPassedOnWhole) {
  const std::string body = kBinaryJson + kBinaryPart;
  auto r = ParseInferRequest(body, {.header_length = std::to_string(strlen(kBinaryJson))});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->query_size, 2);
  EXPECT_EQ(r->body.binary, kBinaryPart);
  EXPECT_EQ(r->body.binary.data(), body.data() + strlen(kBinaryJson)) << "a view, not a copy";
  EXPECT_TRUE(r->body.binary_outputs);
  const Wire wire = r->body.Render({{kDeadlineParameter, "9"}});
  EXPECT_EQ(wire.Pieces().back(), kBinaryPart);
  const std::string joined = wire.Joined();
  const auto sent = nlohmann::json::parse(joined.substr(0, wire.JsonBytes()));
  EXPECT_EQ(sent["parameters"]["binary_data_output"], true);
  EXPECT_EQ(sent["inputs"], nlohmann::json::parse(kBinaryJson)["inputs"]);
  EXPECT_EQ(joined.substr(wire.JsonBytes()), kBinaryPart);
}

TEST(InferRequest, EachBinaryMistakeNamesItsFieldOrHeader) {
  const size_t json_bytes = strlen(kBinaryJson);
  const std::string body = kBinaryJson + kBinaryPart;
  const auto error = [](const std::string& text, const std::string& header_length) {
    auto r = ParseInferRequest(text, {.header_length = header_length});
    return r.ok() ? std::string("accepted") : r.error().message;
  };
  EXPECT_EQ(error(body, "abc"),
            "Inference-Header-Content-Length: must be a whole number of bytes "
            "within the " +
                std::to_string(body.size()) + "-byte body");
  EXPECT_NE(error(body, std::to_string(body.size() + 1)).find("Inference-Header-Content-Length"),
            std::string::npos);
  EXPECT_EQ(error(body.substr(0, body.size() - 1), std::to_string(json_bytes)),
            "inputs: their binary_data_size add up to 23 bytes, but the body's binary part (past "
            "its Inference-Header-Content-Length) holds 22");
  // Without the header the binary part is read as JSON, and is not JSON.
  EXPECT_NE(error(body, "").find("body: "), std::string::npos);
  std::string both = kBinaryJson;
  both.insert(both.find(R"("BYTES", )") + 9, R"("data": ["x"], )");
  EXPECT_NE(
      error(both + kBinaryPart, std::to_string(both.size())).find("inputs[1].data: must be absent"),
      std::string::npos)
      << error(both + kBinaryPart, std::to_string(both.size()));
  const std::string negative = testing::ReplaceFirst(kBinaryJson, "16", "-1");
  EXPECT_EQ(error(negative + kBinaryPart, std::to_string(negative.size())),
            "inputs[0].parameters.binary_data_size: must be a non-negative integer");
  const std::string few_bytes = testing::ReplaceFirst(kBinaryJson, "7}", "3}");
  EXPECT_EQ(error(few_bytes + kBinaryPart.substr(4), std::to_string(few_bytes.size())),
            "inputs[1].parameters.binary_data_size: is 3 bytes; 1 BYTES elements take at least 4");
}

// Whatever the header says and whatever the bytes: never a crash, and a request accepted has
// exactly the binary part its tensors name.
TEST(InferRequest, FuzzedBinaryRequestsNeverCrash) {
  std::mt19937 rng(29);
  const std::string seed = kBinaryJson + kBinaryPart;
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string s =
        testing::Mutate(seed, rng, 4, [&] { return static_cast<char>(rng() % 256); });
    const std::string length =
        std::to_string(rng() % 3 != 0 ? strlen(kBinaryJson) : rng() % (s.size() + 8));
    auto r = ParseInferRequest(s, {.header_length = length});
    if (!r.ok()) continue;
    ++accepted;
    EXPECT_EQ(r->body.binary.size(), s.size() - std::stoul(length));
  }
  EXPECT_GT(accepted, 30);  // the mutations did reach the accepting path
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
}  // namespace pipescale::routing
