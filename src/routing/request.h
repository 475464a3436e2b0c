// The router's view of an Open Inference Protocol (KServe v2 REST) infer request: parsed and
// checked before anything is sent on, so a malformed request is a 400 naming what is wrong.
// Pure: no I/O.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "routing/body.h"

namespace pipescale::routing {

inline constexpr int kMaxDepth = kMaxNesting;    // tensor nesting, far beyond any real shape
inline constexpr size_t kMaxElements = 1 << 22;  // the product of a tensor's shape

// A header naming the execution path; else the request parameter kPathParameter.
inline constexpr std::string_view kPathHeader = "x-pipescale-path";

// The bucket bounds of the query sizes the router counts: every size to 6, then three buckets an
// octave (8, 10, 12, 16, 20, ...) up to the largest batch a spec may name. Kairos plans for a
// bucket's queries at its upper bound: never too small, at most a third too large.
std::vector<double> QuerySizeBounds();

// clang-tidy 14 blames this aggregate's implicit members for what its members may throw, as
// with reconciler::Decision; nothing here is declared noexcept.
struct InferRequest {  // NOLINT(bugprone-exception-escape)
  Body body;           // as received, in the form it is passed on to the first task
  std::string id;      // the request's own, or "" when it has none
  std::string path;    // the path the client named, or "" (the models decide)
  int query_size = 1;  // the leading dimension of the first input (a batch)
};

// The request's HTTP headers the router reads: kPathHeader's value and the binary extension's
// kHeaderLengthField's, each "" when not sent.
struct InferHeaders {
  std::string_view path;
  std::string_view header_length;
};

// kInvalid with a message naming the field ("inputs[0].shape: ..."), for a 400. The body's size
// is the server's to limit (413 past --max-body-bytes, before it is read whole). A tensor sent
// as binary data is checked by its size against its shape and datatype, and the sizes against
// the binary part; its bytes are not read.
Result<InferRequest> ParseInferRequest(std::string_view body, const InferHeaders& headers = {});

// The protocol's error body, {"error": message}; never throws (bytes of the message that are not
// UTF-8 are replaced).
std::string ErrorBody(std::string_view message);

}  // namespace pipescale::routing
