// The Open Inference Protocol's binary tensor data extension (KServe v2, Triton): a body is a JSON
// header of Inference-Header-Content-Length bytes, then the tensors' bytes one after another, each
// tensor naming its share in parameters.binary_data_size. The router reads the header and passes
// the bytes on untouched. Pure.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "routing/body.h"

namespace pipescale::routing {

// The HTTP header that says a body carries binary data, and how many of its bytes are JSON.
inline constexpr std::string_view kHeaderLengthField = "Inference-Header-Content-Length";
// A tensor's parameter: its bytes in the binary part.
inline constexpr std::string_view kBinarySizeParameter = "binary_data_size";
// A request's parameter asking for every output as binary data.
inline constexpr std::string_view kBinaryOutputParameter = "binary_data_output";

// A body as JSON and binary data.
struct SplitBody {
  std::string_view json;
  std::string_view binary;  // "" when the body is all JSON
};

// `body` split at `header_length` (kHeaderLengthField's value, "" when the header was not sent:
// all JSON); kInvalid naming the header when it is not a whole number of bytes within the body.
Result<SplitBody> Split(std::string_view body, std::string_view header_length);

// The bytes a tensor (checked JSON object members) puts in the binary part: its
// parameters.binary_data_size, or nullopt when its data is JSON. kInvalid, naming
// `field`.parameters.binary_data_size, when that is not a non-negative integer.
Result<std::optional<long>> BinarySize(const std::vector<Member>& tensor, const std::string& field);

// The bytes one element of `datatype` (the name, without quotes) takes as binary data, or 0 for
// BYTES, whose elements each carry their own length.
long ElementBytes(std::string_view datatype);

// A non-negative integer as JSON writes it (a checked token), or -1.
long WholeNumber(std::string_view token);

// The tensors' binary_data_size added up, to be held against the binary part. The sum stops at a
// terabyte, past which every part is wrong whatever follows, so it never overflows.
class BinaryTotal {
 public:
  void Add(long bytes) { total_ = std::min(total_ + std::min(bytes, kCap), kCap); }
  // Done when the sum is `binary`'s length; kInvalid saying both, naming `field`, when not.
  Status Check(std::string_view binary, const std::string& field) const;

 private:
  static constexpr long kCap = 1L << 40;
  long total_ = 0;
};

// BinaryTotal over the tensors (the checked "inputs" or "outputs" array) against `binary`.
Status CheckBinaryPart(std::string_view tensors, std::string_view binary, const std::string& field);

}  // namespace pipescale::routing
