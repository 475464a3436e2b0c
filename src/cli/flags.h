// Readers of the flag values the subcommands share (plan, validate, profile, simulate), so each
// kind of value is checked, and its error worded, once.
#pragma once

#include <charconv>
#include <concepts>
#include <string>
#include <string_view>

#include "common/strings.h"

namespace pipescale::cli {

// A whole number in [min, max] into `value`; what is wrong, or "".
template <std::integral T>
std::string ParseCount(const std::string& name, std::string_view text, T min, T max, T& value) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value < min ||
      value > max) {
    return name + " needs an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
           "], got " + QuoteUserText(text);
  }
  return "";
}

}  // namespace pipescale::cli
