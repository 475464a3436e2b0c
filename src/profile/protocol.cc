#include "profile/protocol.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "common/strings.h"

namespace pipescale::profile {
namespace {

using nlohmann::json;

constexpr int64_t kMaxRowElements = int64_t{1} << 24;

json ElementOf(const std::string& datatype) {
  if (datatype == "BOOL") return true;
  if (datatype == "BYTES") return "x";
  if (datatype.starts_with("INT") || datatype.starts_with("UINT")) return 1;
  return 0.5;
}

InputTensor TensorOf(const json& input, const std::vector<int64_t>& row_shape) {
  InputTensor out;
  if (input.contains("name") && input["name"].is_string()) {
    out.name = input["name"].get<std::string>();
  }
  if (input.contains("datatype") && input["datatype"].is_string()) {
    out.datatype = input["datatype"].get<std::string>();
  }
  if (!row_shape.empty()) {
    out.row_shape = row_shape;
    return out;
  }
  const json shape = input.value("shape", json::array());
  if (!shape.is_array() || shape.size() < 2) {
    out.row_shape = shape.is_array() && shape.size() == 1 ? std::vector<int64_t>{} : out.row_shape;
    return out;
  }
  out.row_shape.clear();
  bool any_fixed = false;
  for (size_t i = 1; i < shape.size(); ++i) {
    const bool fixed = shape[i].is_number_integer() && shape[i].get<int64_t>() > 0 &&
                       shape[i].get<int64_t>() <= kMaxRowElements;
    out.row_shape.push_back(fixed ? shape[i].get<int64_t>() : 1);
    any_fixed = any_fixed || fixed;
  }
  if (!any_fixed) out.row_shape.back() = kDefaultRowElements;
  return out;
}

int64_t RowElements(const InputTensor& input) {
  int64_t n = 1;
  for (int64_t d : input.row_shape) n = std::min(n * d, kMaxRowElements);
  return n;
}

}  // namespace

Result<std::vector<InputTensor>> InputsFromMetadata(std::string_view body,
                                                    const std::vector<int64_t>& row_shape) {
  const json metadata = json::parse(body, nullptr, false);
  if (metadata.is_discarded() || !metadata.is_object()) {
    return Error{ErrorKind::kInvalid, "model metadata is not a JSON object: " + Excerpt(body)};
  }
  std::vector<InputTensor> inputs;
  const json listed = metadata.value("inputs", json::array());
  for (const json& input : listed.is_array() ? listed : json::array()) {
    if (input.is_object()) inputs.push_back(TensorOf(input, row_shape));
  }
  if (inputs.empty()) {
    inputs.emplace_back();
    if (!row_shape.empty()) inputs.back().row_shape = row_shape;
  }
  return inputs;
}

Result<std::vector<int64_t>> ParseRowShape(std::string_view text) {
  std::vector<int64_t> shape;
  int64_t elements = 1;
  for (size_t start = 0; start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    int64_t d = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), d);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || d < 1) {
      return Error{ErrorKind::kInvalid,
                   "needs positive dimensions like 3,224,224, got " + QuoteUserText(text)};
    }
    elements = std::min(elements * d, kMaxRowElements + 1);
    shape.push_back(d);
    start = comma + 1;
  }
  if (elements > kMaxRowElements) {
    return Error{ErrorKind::kInvalid, "a row of " + QuoteUserText(text) + " holds more than " +
                                          std::to_string(kMaxRowElements) + " elements"};
  }
  return shape;
}

std::string InferBody(const std::vector<InputTensor>& inputs, int batch) {
  json body = {{"inputs", json::array()}};
  for (const InputTensor& input : inputs) {
    json shape = json::array({batch});
    for (int64_t d : input.row_shape) shape.push_back(d);
    const json data(static_cast<size_t>(batch * RowElements(input)), ElementOf(input.datatype));
    body["inputs"].push_back(
        {{"name", input.name}, {"shape", shape}, {"datatype", input.datatype}, {"data", data}});
  }
  return body.dump();
}

std::string DescribeInputs(const std::vector<InputTensor>& inputs) {
  std::string out;
  for (const InputTensor& input : inputs) {
    std::string shape = "[b";
    for (int64_t d : input.row_shape) shape += ", " + std::to_string(d);
    out += (out.empty() ? "" : "; ") + input.name + " " + shape + "] " + input.datatype;
  }
  return out;
}

Result<InferAnswer> ParseInferAnswer(std::string_view body) {
  const json answer = json::parse(body, nullptr, false);
  if (answer.is_discarded() || !answer.is_object()) {
    return Error{ErrorKind::kInvalid, "the answer is not a JSON object: " + Excerpt(body)};
  }
  const auto outputs = answer.find("outputs");
  if (outputs == answer.end() || !outputs->is_array()) {
    return Error{ErrorKind::kInvalid, "the answer has no \"outputs\" array: " + Excerpt(body)};
  }
  InferAnswer out;
  const json parameters = answer.value("parameters", json::object());
  if (parameters.is_object() && parameters.contains("pipescale_queue_ms") &&
      parameters["pipescale_queue_ms"].is_number() &&
      parameters["pipescale_queue_ms"].get<double>() >= 0) {
    out.queue_ms = parameters["pipescale_queue_ms"].get<double>();
  }
  return out;
}

std::string Excerpt(std::string_view body, size_t max) {
  // A page's line breaks and indentation, each run one space: more of it fits in a line.
  std::string flat;
  for (char c : body.substr(0, 4 * max)) {
    const bool space = c == ' ' || c == '\n' || c == '\r' || c == '\t';
    if (!space) {
      flat += c;
    } else if (!flat.empty() && flat.back() != ' ') {
      flat += ' ';
    }
  }
  if (flat.empty()) return "an empty body";
  return QuoteUserText(flat, max);
}

}  // namespace pipescale::profile
