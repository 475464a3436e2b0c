// The Open Inference Protocol (KServe v2 REST) as `pipescale profile` speaks it: the input
// tensors taken from a model's metadata, an inference request of b rows, and what an answer
// must hold. Pure: no sockets here (oip_client.h sends them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace pipescale::profile {

// Elements per row when neither the metadata nor --input-shape says.
inline constexpr int64_t kDefaultRowElements = 16;

struct InputTensor {
  std::string name = "input";
  std::string datatype = "FP32";
  std::vector<int64_t> row_shape = {kDefaultRowElements};  // the dimensions after the batch's
};

// The inputs of GET /v2/models/{model}'s answer: each input's name, datatype and shape less its
// first (batch) dimension, where a variable dimension (-1) becomes 1, or kDefaultRowElements
// when every one is variable. `row_shape`, when not empty, replaces every input's. kInvalid
// when the body is not a JSON object; the default input when it lists none.
Result<std::vector<InputTensor>> InputsFromMetadata(std::string_view body,
                                                    const std::vector<int64_t>& row_shape);

// "3,224,224": the dimensions of one row; kInvalid unless each is a positive integer and the
// row holds at most 2^24 elements.
Result<std::vector<int64_t>> ParseRowShape(std::string_view text);

// {"inputs": [{"name", "shape": [batch, row...], "datatype", "data": [...]}]}, with data of
// the type's kind (0.5, 1, true or "x").
std::string InferBody(const std::vector<InputTensor>& inputs, int batch);

// "[b, 3, 224, 224] FP32" per input, for the report.
std::string DescribeInputs(const std::vector<InputTensor>& inputs);

struct InferAnswer {
  std::optional<double> queue_ms;  // parameters.pipescale_queue_ms, when the server reports it
};

// A 200 answer's body: a JSON object with an "outputs" array. kInvalid saying what it is
// otherwise (not JSON, HTML, no outputs).
Result<InferAnswer> ParseInferAnswer(std::string_view body);

// At most `max` bytes of a server's answer, printable and quoted, for a message.
std::string Excerpt(std::string_view body, size_t max = 120);

}  // namespace pipescale::profile
