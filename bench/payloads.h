// The requests and answers the router's benches send: valid Open Inference Protocol bodies of
// the sizes real models take (a text model's few KB, an image's 100 KB to a few MB).
#pragma once

#include <cstdio>
#include <random>
#include <string>

namespace pipescale::bench {

constexpr const char* kTinyRequest =
    R"({"id":"r","inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"data":[0.1,0.2,0.3,0.4]}]})";
// What a classifier answers: its scores, the top label and the server's parameters (300 bytes).
constexpr const char* kReply =
    R"({"model_name":"m","model_version":"1","id":"r","parameters":{"sequence_id":0,)"
    R"("queue_time_us":41,"compute_time_us":1210},"outputs":[{"name":"scores","datatype":"FP32",)"
    R"("shape":[1,8],"data":[0.0125,0.0311,0.7702,0.0093,0.0451,0.0622,0.0318,0.0378]},)"
    R"({"name":"label","datatype":"BYTES","shape":[1],"data":["tabby cat"],)"
    R"("parameters":{"content_type":"str"}}]})";

// A valid OIP request of about `bytes` bytes: an FP32 tensor [1, n] written as a client writes
// it, six decimals a number; "tiny" is the 4-number request.
inline std::string RequestOf(const std::string& size) {
  if (size == "tiny") return kTinyRequest;
  const size_t bytes = size == "1KB" ? 1024 : size == "100KB" ? 100 << 10 : 1 << 20;
  const std::string head = R"({"id":"r","inputs":[{"name":"x","datatype":"FP32","shape":[1,)";
  const size_t n = (bytes - head.size() - 40) / 9;  // "0.123456," is 9 bytes
  std::string data;
  std::mt19937 rng(static_cast<unsigned>(bytes));
  std::uniform_int_distribution<int> digits(0, 999999);
  char number[16];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(number, sizeof number, "%s0.%06d", i == 0 ? "" : ",", digits(rng));
    data += number;
  }
  return head + std::to_string(n) + R"(],"data":[)" + data + "]}]}";
}

// A request in the binary data extension: its JSON, then the tensor's bytes; `json_bytes` is what
// the Inference-Header-Content-Length header says.
struct BinaryRequest {
  std::string body;
  size_t json_bytes = 0;
};

// An FP32 tensor [1, n] of about `size`'s bytes ("1KB-bin", "100KB-bin", "1MB-bin") as binary data.
inline BinaryRequest BinaryRequestOf(const std::string& size) {
  const std::string text = size.substr(0, size.find('-'));
  const size_t bytes = text == "1KB" ? 1024 : text == "100KB" ? 100 << 10 : 1 << 20;
  const size_t n = bytes / 4;
  const std::string json = R"({"id":"r","inputs":[{"name":"x","datatype":"FP32","shape":[1,)" +
                           std::to_string(n) + R"(],"parameters":{"binary_data_size":)" +
                           std::to_string(4 * n) + "}}]}";
  std::string body = json;
  std::mt19937 rng(static_cast<unsigned>(bytes));
  for (size_t i = 0; i < 4 * n; ++i) body += static_cast<char>(rng());
  return {body, json.size()};
}

}  // namespace pipescale::bench
