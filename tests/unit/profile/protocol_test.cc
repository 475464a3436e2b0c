#include "profile/protocol.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pipescale::profile {
namespace {

using nlohmann::json;

TEST(Protocol, InputsComeFromTheModelsMetadata) {
  auto inputs = InputsFromMetadata(R"({"name": "m", "inputs": [
      {"name": "image", "datatype": "UINT8", "shape": [-1, 3, 8, 8]},
      {"name": "mask", "datatype": "BOOL", "shape": [-1, -1]},
      {"name": "scale", "datatype": "FP16", "shape": [-1]}]})",
                                   {});
  ASSERT_TRUE(inputs.ok()) << inputs.error().message;
  ASSERT_EQ(inputs->size(), 3u);
  EXPECT_EQ((*inputs)[0].row_shape, (std::vector<int64_t>{3, 8, 8}));
  EXPECT_EQ((*inputs)[1].row_shape, (std::vector<int64_t>{kDefaultRowElements}));
  EXPECT_EQ((*inputs)[2].row_shape, (std::vector<int64_t>{}));
  EXPECT_EQ(DescribeInputs(*inputs), "image [b, 3, 8, 8] UINT8; mask [b, 16] BOOL; scale [b] FP16");
  // A variable dimension beside fixed ones is one element; --input-shape replaces them all.
  auto partial = InputsFromMetadata(R"({"inputs": [{"name": "x", "shape": [-1, -1, 4]}]})", {});
  EXPECT_EQ((*partial)[0].row_shape, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ((*partial)[0].datatype, "FP32");
  auto given = InputsFromMetadata(R"({"inputs": [{"name": "x", "shape": [-1, -1, 4]}]})", {2, 2});
  EXPECT_EQ((*given)[0].row_shape, (std::vector<int64_t>{2, 2}));
  // No inputs listed: one FP32 input of 16 elements a row.
  auto none = InputsFromMetadata(R"({"name": "m"})", {});
  ASSERT_EQ(none->size(), 1u);
  EXPECT_EQ(DescribeInputs(*none), "input [b, 16] FP32");
  EXPECT_FALSE(InputsFromMetadata("<html>hi</html>", {}).ok());
  EXPECT_FALSE(InputsFromMetadata("[1, 2]", {}).ok());
}

TEST(Protocol, ARequestOfBRows) {
  const std::vector<InputTensor> inputs = {{.name = "x", .datatype = "FP32", .row_shape = {2, 3}},
                                           {.name = "ids", .datatype = "INT64", .row_shape = {}}};
  const json body = json::parse(InferBody(inputs, 4));
  ASSERT_EQ(body["inputs"].size(), 2u);
  EXPECT_EQ(body["inputs"][0]["shape"], json({4, 2, 3}));
  EXPECT_EQ(body["inputs"][0]["data"].size(), 24u);
  EXPECT_EQ(body["inputs"][0]["data"][0], 0.5);
  EXPECT_EQ(body["inputs"][1]["shape"], json({4}));
  EXPECT_EQ(body["inputs"][1]["data"], json({1, 1, 1, 1}));
  EXPECT_EQ(body["inputs"][1]["datatype"], "INT64");
}

TEST(Protocol, RowShapes) {
  EXPECT_EQ(*ParseRowShape("3,224,224"), (std::vector<int64_t>{3, 224, 224}));
  EXPECT_EQ(*ParseRowShape("16"), (std::vector<int64_t>{16}));
  for (const char* bad : {"", "3,,4", "0", "-1", "a", "4096,4096,2"}) {
    EXPECT_FALSE(ParseRowShape(bad).ok()) << bad;
  }
}

TEST(Protocol, WhatAnAnswerMustHold) {
  auto queued = ParseInferAnswer(
      R"({"outputs": [], "parameters": {"pipescale_queue_ms": 1.5, "batch_size": 1}})");
  ASSERT_TRUE(queued.ok());
  EXPECT_EQ(queued->queue_ms, 1.5);
  auto plain = ParseInferAnswer(R"({"model_name": "m", "outputs": [{"name": "y"}]})");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->queue_ms.has_value());
  auto html = ParseInferAnswer("<!DOCTYPE html><html>nope</html>");
  ASSERT_FALSE(html.ok());
  EXPECT_EQ(html.error().message,
            "the answer is not a JSON object: \"<!DOCTYPE html><html>nope</html>\"");
  auto no_outputs = ParseInferAnswer(R"({"error": "boom"})");
  ASSERT_FALSE(no_outputs.ok());
  EXPECT_EQ(no_outputs.error().message,
            "the answer has no \"outputs\" array: \"{\\\"error\\\": \\\"boom\\\"}\"");
  EXPECT_EQ(ParseInferAnswer("").error().message, "the answer is not a JSON object: an empty body");
}

}  // namespace
}  // namespace pipescale::profile
