#include "common/flags.h"

#include <cctype>
#include <cmath>

namespace pipescale {
namespace {

// A bound as people write it: 3600, 0.5, 1000000.
std::string Bound(double v) { return StrFormat("%.10g", v); }

}  // namespace

Error FlagError(std::string_view name, std::string_view wanted, std::string_view text) {
  return Error{ErrorKind::kInvalid, std::string(name) + ": needs " + std::string(wanted) +
                                        ", got " + QuoteUserText(text)};
}

Result<double> ParseNumber(std::string_view name, std::string_view text, double min, double max) {
  const std::string wanted = "a number in [" + Bound(min) + ", " + Bound(max) + "]";
  // from_chars takes no leading '+', and reads "inf", "nan" and (with this format) no hex.
  const bool plus = text.starts_with('+');
  const std::string_view digits = plus ? text.substr(1) : text;
  const bool numeral = !digits.empty() && (std::isdigit(static_cast<unsigned char>(digits[0])) ||
                                           digits[0] == '.' || (digits[0] == '-' && !plus));
  double value = 0;
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, value, std::chars_format::general);
  if (!numeral || ec != std::errc() || ptr != end || !std::isfinite(value) || value < min ||
      value > max) {
    return FlagError(name, wanted, text);
  }
  return value;
}

std::string ParseFlag(std::string_view name, std::string_view text, double min, double max,
                      double& value) {
  auto parsed = ParseNumber(name, text, min, max);
  if (!parsed) return parsed.error().message;
  value = *parsed;
  return "";
}

Result<HostPort> ParseHostPort(std::string_view name, std::string_view text, int min_port) {
  const size_t colon = text.rfind(':');
  const std::string wanted = "HOST:PORT with a port in [" + std::to_string(min_port) + ", 65535]";
  if (colon == std::string_view::npos) return FlagError(name, wanted, text);
  auto port = ParseInteger<int>(name, text.substr(colon + 1), min_port, 65535);
  if (!port) return FlagError(name, wanted, text);
  return HostPort{std::string(text.substr(0, colon)), static_cast<unsigned short>(*port)};
}

}  // namespace pipescale
