#include "api/quantity.h"

#include <charconv>
#include <cmath>
#include <string>

namespace pipescale::api {
namespace {

struct Suffix {
  std::string_view text;
  double factor;
};

// Binary suffixes first: "Mi" must not be read as "M" followed by garbage.
constexpr Suffix kSuffixes[] = {{"Ki", 1024.0},
                                {"Mi", 1048576.0},
                                {"Gi", 1073741824.0},
                                {"Ti", 1099511627776.0},
                                {"Pi", 1125899906842624.0},
                                {"Ei", 1152921504606846976.0},
                                {"n", 1e-9},
                                {"u", 1e-6},
                                {"m", 1e-3},
                                {"k", 1e3},
                                {"M", 1e6},
                                {"G", 1e9},
                                {"T", 1e12},
                                {"P", 1e15},
                                {"E", 1e18}};

}  // namespace

std::optional<double> ParseQuantity(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  double factor = 1;
  for (const Suffix& s : kSuffixes) {
    if (text.size() > s.text.size() && text.ends_with(s.text)) {
      factor = s.factor;
      text.remove_suffix(s.text.size());
      break;
    }
  }
  const std::string number(text);  // from_chars for doubles also reads "1e3"
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || end != number.data() + number.size() || !std::isfinite(value) ||
      value < 0) {
    return std::nullopt;
  }
  return value * factor;
}

}  // namespace pipescale::api
