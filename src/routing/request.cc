#include "routing/request.h"

#include <algorithm>
#include <array>

#include "model/limits.h"
#include "routing/binary.h"

namespace pipescale::routing {

std::vector<double> QuerySizeBounds() {
  std::vector<double> out = {1, 2, 3, 4, 5, 6};
  for (int octave = 8; octave <= limits::kMaxBatch; octave *= 2) {
    for (int quarters : {4, 5, 6}) {  // 1, 1.25 and 1.5 octaves
      const int bound = octave / 4 * quarters;
      if (bound <= limits::kMaxBatch) out.push_back(bound);
    }
  }
  return out;
}

namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 13> kDatatypes = {
    "BOOL",  "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16",
    "INT32", "INT64", "FP16",   "FP32",   "FP64",   "BYTES"};

Error Invalid(const std::string& field, const std::string& why) {
  return Error{ErrorKind::kInvalid, field + ": " + why};
}

bool IsString(std::string_view token) { return !token.empty() && token.front() == '"'; }

// A string token's text (the scanner has checked its grammar; escapes are rare, so only then
// is it decoded by a parser, which never gets to throw).
std::string Text(std::string_view token) {
  if (token.find('\\') == std::string_view::npos) {
    return std::string(token.substr(1, token.size() - 2));
  }
  const json decoded = json::parse(token, nullptr, false);
  return decoded.is_string() ? decoded.get<std::string>() : std::string();
}

struct Shape {
  long elements = 1;
  long first = 0;  // the leading dimension: the query's size
};

Result<Shape> CheckShape(std::string_view shape, const std::string& field) {
  const auto dims = shape.front() == '[' ? ElementsOf(shape) : std::vector<std::string_view>{};
  if (dims.empty()) return Invalid(field, "must be a non-empty array of non-negative integers");
  Shape out{.elements = 1, .first = WholeNumber(dims.front())};
  for (std::string_view d : dims) {
    const long dim = WholeNumber(d);
    if (dim < 0) return Invalid(field, "must be a non-empty array of non-negative integers");
    if (dim > 0 && out.elements > static_cast<long>(kMaxElements) / dim) {
      return Invalid(field, "holds more than " + std::to_string(kMaxElements) + " elements");
    }
    out.elements *= dim;
  }
  return out;
}

// A binary tensor's size against its shape: exact for fixed-size types; a BYTES element takes at
// least its 4-byte length.
Status CheckBinaryTensor(long bytes, long elements, std::string_view datatype,
                         const std::string& field) {
  const long each = ElementBytes(datatype);
  const long needed = elements * (each > 0 ? each : 4);
  if (each > 0 ? bytes == needed : bytes >= needed) return Done{};
  return Invalid(field + ".parameters.binary_data_size",
                 "is " + std::to_string(bytes) + " bytes; " + std::to_string(elements) + " " +
                     std::string(datatype) + " elements take " + (each > 0 ? "" : "at least ") +
                     std::to_string(needed));
}

// What a checked input tensor says of the request.
struct Input {
  long first = 0;   // its first dimension (the query's size)
  long binary = 0;  // its bytes in the binary part (0 when its data is JSON)
};

// Checks one input tensor.
Result<Input> CheckInput(std::string_view input, const std::string& field) {
  if (input.front() != '{') return Invalid(field, "must be an object");
  const std::vector<Member> members = MembersOf(input);
  const std::string_view name = Find(members, "name");
  if (!IsString(name) || name == "\"\"")
    return Invalid(field + ".name", "must be a non-empty string");
  const std::string_view type = Find(members, "datatype");
  if (!IsString(type) || std::find(kDatatypes.begin(), kDatatypes.end(),
                                   type.substr(1, type.size() - 2)) == kDatatypes.end()) {
    return Invalid(field + ".datatype", "must be one of the protocol's datatypes, e.g. FP32");
  }
  const std::string_view shape = Find(members, "shape");
  if (shape.empty()) return Invalid(field + ".shape", "is required");
  auto checked = CheckShape(shape, field + ".shape");
  if (!checked) return checked.error();
  const long elements = checked->elements;
  const std::string_view data = Find(members, "data");
  auto binary = BinarySize(members, field);
  if (!binary) return binary.error();
  if (*binary) {
    if (!data.empty()) return Invalid(field + ".data", "must be absent: the tensor is binary data");
    Status fits = CheckBinaryTensor(**binary, elements, type.substr(1, type.size() - 2), field);
    if (!fits) return fits.error();
    return Input{.first = checked->first, .binary = **binary};
  }
  if (data.empty()) return Invalid(field + ".data", "is required");
  const long count = CountScalars(data);
  if (count < 0) return Invalid(field + ".data", "must hold only numbers, booleans or strings");
  if (count != elements) {
    return Invalid(field + ".data", "holds " + std::to_string(count) +
                                        " elements, the shape says " + std::to_string(elements));
  }
  return Input{.first = checked->first};
}

Status CheckOutputs(std::string_view outputs) {
  if (outputs.front() != '[') return Invalid("outputs", "must be an array");
  const auto items = ElementsOf(outputs);
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].front() != '{' || !IsString(Find(MembersOf(items[i]), "name"))) {
      return Invalid("outputs[" + std::to_string(i) + "].name", "must be a string");
    }
  }
  return Done{};
}

// The path the client named in the request's parameters, or "".
Result<std::string> NamedPath(std::string_view parameters) {
  if (parameters.empty()) return std::string();
  if (parameters.front() != '{') return Invalid("parameters", "must be an object");
  const std::string_view path = Find(MembersOf(parameters), kPathParameter);
  if (path.empty()) return std::string();
  if (!IsString(path)) return Invalid("parameters.pipescale_path", "must be a string");
  return Text(path);
}

}  // namespace

// One scan checks the syntax and notes where each member lies; the checks below split those
// spans without checking them again (a tensor's data is counted in one pass), and numbers are
// never converted but for the shape's.
Result<InferRequest> ParseInferRequest(std::string_view body, const InferHeaders& headers) {
  auto split = Split(body, headers.header_length);
  if (!split) return split.error();
  auto members = ScanObject(split->json);
  if (!members) {
    const std::string why = members.error().message;
    return Invalid("body", why == "is not a JSON object" ? "must be a JSON object" : why);
  }
  InferRequest out;
  if (const std::string_view id = Find(*members, "id"); !id.empty()) {
    if (!IsString(id)) return Invalid("id", "must be a string");
    out.id = Text(id);
  }
  auto path = NamedPath(Find(*members, "parameters"));
  if (!path) return path.error();
  const std::string_view inputs = Find(*members, "inputs");
  const auto tensors = !inputs.empty() && inputs.front() == '[' ? ElementsOf(inputs)
                                                                : std::vector<std::string_view>{};
  if (tensors.empty()) return Invalid("inputs", "must be a non-empty array");
  // The sizes CheckInput read, not read again: splitting the tensors twice passed over every
  // JSON request's data once more.
  BinaryTotal binary;
  for (size_t i = 0; i < tensors.size(); ++i) {
    auto input = CheckInput(tensors[i], "inputs[" + std::to_string(i) + "]");
    if (!input) return input.error();
    if (i == 0) out.query_size = static_cast<int>(std::clamp<long>(input->first, 1, 1 << 20));
    binary.Add(input->binary);
  }
  if (Status fits = binary.Check(split->binary, "inputs"); !fits) return fits.error();
  if (const std::string_view outputs = Find(*members, "outputs"); !outputs.empty()) {
    if (Status s = CheckOutputs(outputs); !s) return s.error();
  }
  out.path = headers.path.empty() ? *path : std::string(headers.path);
  auto text = ClientBody(*members, split->binary);
  if (!text) return Invalid("body", text.error().message);
  out.body = std::move(*text);
  return out;
}

std::string ErrorBody(std::string_view message) {
  // A message may quote what a model pod answered, in whatever bytes it sent: those that are
  // not UTF-8 are replaced (U+FFFD) rather than thrown on, so the client still gets its status.
  return json{{"error", std::string(message)}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace pipescale::routing
