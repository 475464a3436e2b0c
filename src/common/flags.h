// Reading the numbers of command lines (every binary's flags) strictly: the whole text is a
// number within its range, or an error naming the flag. atoi and friends read "x" as 0 and "1x"
// as 1, and stoi throws: a typo must neither change what a process does nor crash it.
#pragma once

#include <charconv>
#include <concepts>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/strings.h"

namespace pipescale {

// kInvalid for `text`, the value of flag `name`, which is not `wanted`:
// `--max-in-flight: needs an integer in [1, 1000000], got "x"`.
Error FlagError(std::string_view name, std::string_view wanted, std::string_view text);

// A whole number in [min, max], in decimal digits with an optional '-': nothing else, no
// spaces, no '+', no hex.
template <std::integral T>
Result<T> ParseInteger(std::string_view name, std::string_view text, T min, T max) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) {
    return FlagError(
        name, "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]", text);
  }
  return value;
}

// A finite decimal number in [min, max] ("2", "0.5", "1e-3", "+1"): no hex, inf, nan, spaces or
// trailing characters.
Result<double> ParseNumber(std::string_view name, std::string_view text, double min, double max);

// The same into `value`, for readers that collect what is wrong: the message, or "" (and
// `value` set) when the text is fine.
template <std::integral T>
std::string ParseFlag(std::string_view name, std::string_view text, T min, T max, T& value) {
  auto parsed = ParseInteger(name, text, min, max);
  if (!parsed) return parsed.error().message;
  value = *parsed;
  return "";
}
std::string ParseFlag(std::string_view name, std::string_view text, double min, double max,
                      double& value);

// HOST:PORT (the last ':' splits them, so [::1]:80 keeps its brackets in HOST) with a port in
// [min_port, 65535]; HOST may be empty (":8080": every interface), whoever binds or connects
// judges it.
struct HostPort {
  std::string host;
  unsigned short port = 0;
};
Result<HostPort> ParseHostPort(std::string_view name, std::string_view text, int min_port);

}  // namespace pipescale
