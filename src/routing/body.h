// Open Inference Protocol bodies as text on the request path: a JSON object's syntax is checked
// once and its members noted as spans, and the next request is spliced from those spans, so the
// router builds and serialises no JSON document per call. Pure.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace pipescale::routing {

inline constexpr int kMaxNesting = 32;  // arrays and objects in one another, far beyond OIP's

// The router's own request parameters: the path the client named, and the milliseconds left
// before the path's deadline (so a model server may refuse work it cannot finish in time).
inline constexpr std::string_view kPathParameter = "pipescale_path";
// What every parameter of the router's own begins with, in requests and answers alike.
inline constexpr std::string_view kRouterParameterPrefix = "pipescale_";
inline constexpr std::string_view kDeadlineParameter = "pipescale_deadline_ms";
// A response parameter a model server may set: the milliseconds the request waited for its
// batch, which splits the task's time as the router sees it into queue and service.
inline constexpr const char* kQueueParameter = "pipescale_queue_ms";
// A response parameter a model server may set: the rows of the batch it served the request in
// (all its requests' rows), which names the d(b) its service time measures.
inline constexpr const char* kBatchRowsParameter = "pipescale_batch_rows";

// A member of a scanned object: its key as written between the quotes (escapes left as they
// are) and its value's text.
struct Member {
  std::string_view key;
  std::string_view value;
};

// Done when `text` is exactly one JSON value nested at most kMaxNesting deep; else kInvalid
// saying why ("is not JSON (at byte 12)", "is nested deeper than 32").
Status CheckJson(std::string_view text);
// The members of `text`, which must be exactly one JSON object (whitespace around it allowed)
// nested at most kMaxNesting deep; kInvalid naming the offset of the first error otherwise.
// Strings must be valid UTF-8, as JSON text must.
Result<std::vector<Member>> ScanObject(std::string_view text);
// The elements of `text`, which must be exactly one JSON array.
Result<std::vector<std::string_view>> ScanArray(std::string_view text);
// The same for text inside a value that ScanObject, ScanArray or CheckJson has already checked:
// they only find where each item lies, a byte at a time, so a request's tensors are validated
// once however often the router looks into them. Text not so checked is a broken invariant.
std::vector<Member> MembersOf(std::string_view checked_object);
std::vector<std::string_view> ElementsOf(std::string_view checked_array);
// The scalars in a checked value, arrays in arrays counted through (a tensor's "data", flat or
// nested), or -1 when it holds an object or null.
long CountScalars(std::string_view checked);
// The value of the member keyed `key` (the last, if several), or "".
std::string_view Find(const std::vector<Member>& members, std::string_view key);

// A request to a task as it is sent: its pieces one after another, never joined on the way (the
// views point into the Body it was rendered from, which must outlive it).
struct Wire {
  static constexpr std::string_view kHead = "{\"inputs\":";
  std::string_view inputs;
  std::string rest;         // the id, other members and parameters, and the closing brace
  std::string_view binary;  // the binary data extension's part, after the JSON, or ""

  size_t JsonBytes() const { return kHead.size() + inputs.size() + rest.size(); }
  std::array<std::string_view, 4> Pieces() const { return {kHead, inputs, rest, binary}; }
  std::string Joined() const;  // the whole body as one string (for tests and benches)
};

// A request to a task as the router holds it between calls: the object's members as text, with
// the router's own parameters written in at each attempt. The tensors are views into the
// request or answer they came in, which outlives every call made with them: a walk passes its
// tensors on without copying them.
struct Body {
  std::string_view inputs;  // the "inputs" array
  std::string_view binary;  // its tensors' binary data (the binary extension), or ""
  std::string id;           // the "id" string token, or ""
  std::string others;       // any other members, "key":value joined by commas
  std::string parameters;   // the members of "parameters" but the router's own, joined
  // The request sent binary data or asked for binary outputs: every task of its walk is asked
  // for binary outputs (binary_data_output), and the client is answered in binary.
  bool binary_outputs = false;

  // The object, its parameters gaining `set` (keys and JSON values).
  Wire Render(const std::vector<std::pair<std::string_view, std::string>>& set) const;
};

// A client's request (ScanObject's members of its JSON, then its binary part) as a Body; the
// router's own parameters it carried are dropped (it writes them itself).
Result<Body> ClientBody(const std::vector<Member>& request, std::string_view binary);

// What a model answered, read in place: `body` must outlive it. (clang-tidy 14 blames the
// aggregate's implicit members for what nlohmann may throw, as with InferRequest.)
struct Answer {               // NOLINT(bugprone-exception-escape)
  std::string_view outputs;   // the "outputs" array, or "" when absent or empty
  std::string_view binary;    // the outputs' binary data (the binary extension), or ""
  nlohmann::json parameters;  // the answer's parameters the router reads (kRouterParameterPrefix)
};
// `header_length`: the answer's Inference-Header-Content-Length, or "" (all JSON).
Result<Answer> ReadAnswer(std::string_view body, std::string_view header_length = {});

// The next task's request: the outputs before as its inputs, their binary data with them (the
// previous inputs when the model returned none), the client's id and binary choice kept.
Body NextBody(const Answer& answer, const Body& previous);

// The answer's outputs (an Answer's, so checked) for the client, each named "<task>/<name>";
// kInvalid when an output is not an object.
Result<std::vector<std::string>> NamedOutputs(std::string_view task, std::string_view outputs);

// A JSON string token for `text`.
std::string Quoted(std::string_view text);

}  // namespace pipescale::routing
