#include "routing/binary.h"

#include <array>
#include <charconv>
#include <string>
#include <utility>

namespace pipescale::routing {
long WholeNumber(std::string_view token) {
  long value = -1;
  const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
  return error == std::errc() && end == token.data() + token.size() && value >= 0 ? value : -1;
}

Result<SplitBody> Split(std::string_view body, std::string_view header_length) {
  if (header_length.empty()) return SplitBody{body, {}};
  // A header's value may carry spaces and tabs around it; a JSON token does not.
  const size_t from = header_length.find_first_not_of(" \t");
  const size_t to = header_length.find_last_not_of(" \t");
  const long json =
      from == std::string_view::npos ? -1 : WholeNumber(header_length.substr(from, to - from + 1));
  if (json < 0 || static_cast<size_t>(json) > body.size()) {
    return Error{ErrorKind::kInvalid, std::string(kHeaderLengthField) +
                                          ": must be a whole number of bytes within the " +
                                          std::to_string(body.size()) + "-byte body"};
  }
  return SplitBody{body.substr(0, json), body.substr(json)};
}

Result<std::optional<long>> BinarySize(const std::vector<Member>& tensor,
                                       const std::string& field) {
  const std::string_view parameters = Find(tensor, "parameters");
  if (parameters.empty() || parameters.front() != '{') return std::optional<long>();
  const std::string_view size = Find(MembersOf(parameters), kBinarySizeParameter);
  if (size.empty()) return std::optional<long>();
  const long bytes = WholeNumber(size);
  if (bytes < 0) {
    return Error{ErrorKind::kInvalid,
                 field + ".parameters.binary_data_size: must be a non-negative integer"};
  }
  return std::optional<long>(bytes);
}

long ElementBytes(std::string_view datatype) {
  static constexpr std::array<std::pair<std::string_view, long>, 14> kBytes = {{{"BOOL", 1},
                                                                                {"UINT8", 1},
                                                                                {"INT8", 1},
                                                                                {"UINT16", 2},
                                                                                {"INT16", 2},
                                                                                {"FP16", 2},
                                                                                {"BF16", 2},
                                                                                {"UINT32", 4},
                                                                                {"INT32", 4},
                                                                                {"FP32", 4},
                                                                                {"UINT64", 8},
                                                                                {"INT64", 8},
                                                                                {"FP64", 8},
                                                                                {"BYTES", 0}}};
  for (const auto& [name, bytes] : kBytes) {
    if (name == datatype) return bytes;
  }
  return 0;
}

Status BinaryTotal::Check(std::string_view binary, const std::string& field) const {
  if (static_cast<size_t>(total_) == binary.size()) return Done{};
  const std::string sum =
      total_ == kCap ? "more than " + std::to_string(kCap) : std::to_string(total_);
  return Error{ErrorKind::kInvalid, field + ": their binary_data_size add up to " + sum +
                                        " bytes, but the body's binary part (past its " +
                                        std::string(kHeaderLengthField) + ") holds " +
                                        std::to_string(binary.size())};
}

Status CheckBinaryPart(std::string_view tensors, std::string_view binary,
                       const std::string& field) {
  BinaryTotal total;
  const std::vector<std::string_view> items = ElementsOf(tensors);
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].front() != '{') continue;  // the caller names what is not a tensor
    auto size = BinarySize(MembersOf(items[i]), field + "[" + std::to_string(i) + "]");
    if (!size) return size.error();
    total.Add(size->value_or(0));
  }
  return total.Check(binary, field);
}

}  // namespace pipescale::routing
