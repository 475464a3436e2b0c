#include "router/request.h"

#include <array>
#include <functional>

#include "common/strings.h"

namespace pipescale::router {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 13> kDatatypes = {
    "BOOL",  "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16",
    "INT32", "INT64", "FP16",   "FP32",   "FP64",   "BYTES"};

Error Invalid(const std::string& field, const std::string& why) {
  return Error{ErrorKind::kInvalid, field + ": " + why};
}

// Elements in `data`, flat or nested, or -1 when it holds something that is not a scalar.
long CountElements(const json& data) {
  if (!data.is_array()) return data.is_primitive() && !data.is_null() ? 1 : -1;
  long n = 0;
  for (const json& item : data) {
    const long inner = CountElements(item);
    if (inner < 0) return -1;
    n += inner;
  }
  return n;
}

Result<long> CheckShape(const json& shape, const std::string& field) {
  if (!shape.is_array() || shape.empty()) {
    return Invalid(field, "must be a non-empty array of non-negative integers");
  }
  long elements = 1;
  for (const json& d : shape) {
    if (!d.is_number_integer() || d.get<long>() < 0) {
      return Invalid(field, "must be a non-empty array of non-negative integers");
    }
    const long dim = d.get<long>();
    if (dim > 0 && elements > static_cast<long>(kMaxElements) / dim) {
      return Invalid(field, "holds more than " + std::to_string(kMaxElements) + " elements");
    }
    elements *= dim;
  }
  return elements;
}

Status CheckInput(const json& input, const std::string& field) {
  if (!input.is_object()) return Invalid(field, "must be an object");
  const auto name = input.find("name");
  if (name == input.end() || !name->is_string() || name->get<std::string>().empty()) {
    return Invalid(field + ".name", "must be a non-empty string");
  }
  const auto type = input.find("datatype");
  if (type == input.end() || !type->is_string() ||
      std::find(kDatatypes.begin(), kDatatypes.end(), type->get<std::string>()) ==
          kDatatypes.end()) {
    return Invalid(field + ".datatype", "must be one of the protocol's datatypes, e.g. FP32");
  }
  const auto shape = input.find("shape");
  if (shape == input.end()) return Invalid(field + ".shape", "is required");
  auto elements = CheckShape(*shape, field + ".shape");
  if (!elements) return elements.error();
  const auto data = input.find("data");
  if (data == input.end()) return Invalid(field + ".data", "is required");
  const long count = CountElements(*data);
  if (count < 0) return Invalid(field + ".data", "must hold only numbers, booleans or strings");
  if (count != *elements) {
    return Invalid(field + ".data", "holds " + std::to_string(count) +
                                        " elements, the shape says " + std::to_string(*elements));
  }
  return Done{};
}

}  // namespace

Result<InferRequest> ParseInferRequest(std::string_view body, std::string_view path_header) {
  if (body.size() > kMaxBodyBytes) {
    return Invalid("body", "is larger than " + std::to_string(kMaxBodyBytes) + " bytes");
  }
  int depth = 0;
  bool too_deep = false;
  const json::parser_callback_t guard = [&](int d, json::parse_event_t event, json&) {
    if (event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) {
      depth = d;
      too_deep = too_deep || d > kMaxDepth;
    }
    return !too_deep;
  };
  json parsed = json::parse(body, guard, /*allow_exceptions=*/false);
  if (too_deep) return Invalid("body", "is nested deeper than " + std::to_string(kMaxDepth));
  if (parsed.is_discarded()) return Invalid("body", "is not JSON");
  if (!parsed.is_object()) return Invalid("body", "must be a JSON object");

  InferRequest out;
  if (const auto id = parsed.find("id"); id != parsed.end()) {
    if (!id->is_string()) return Invalid("id", "must be a string");
    out.id = id->get<std::string>();
  }
  const auto parameters = parsed.find("parameters");
  if (parameters != parsed.end() && !parameters->is_object()) {
    return Invalid("parameters", "must be an object");
  }
  const auto inputs = parsed.find("inputs");
  if (inputs == parsed.end() || !inputs->is_array() || inputs->empty()) {
    return Invalid("inputs", "must be a non-empty array");
  }
  for (size_t i = 0; i < inputs->size(); ++i) {
    if (Status s = CheckInput((*inputs)[i], "inputs[" + std::to_string(i) + "]"); !s) {
      return s.error();
    }
  }
  if (const auto outputs = parsed.find("outputs"); outputs != parsed.end()) {
    if (!outputs->is_array()) return Invalid("outputs", "must be an array");
    for (size_t i = 0; i < outputs->size(); ++i) {
      const json& o = (*outputs)[i];
      if (!o.is_object() || !o.contains("name") || !o["name"].is_string()) {
        return Invalid("outputs[" + std::to_string(i) + "].name", "must be a string");
      }
    }
  }
  const json& shape = (*inputs)[0]["shape"];
  out.query_size =
      static_cast<int>(std::max<long>(1, std::min<long>(shape[0].get<long>(), 1 << 20)));
  if (!path_header.empty()) {
    out.path = std::string(path_header);
  } else if (parameters != parsed.end()) {
    if (const auto p = parameters->find(kPathParameter); p != parameters->end()) {
      if (!p->is_string()) return Invalid("parameters.pipescale_path", "must be a string");
      out.path = p->get<std::string>();
    }
  }
  out.body = std::move(parsed);
  return out;
}

std::string ErrorBody(std::string_view message) {
  return json{{"error", std::string(message)}}.dump();
}

}  // namespace pipescale::router
