#include "common/time.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "common/check.h"

namespace pipescale {

std::string FormatRfc3339(double unix_seconds, int fraction_digits) {
  PIPESCALE_CHECK(fraction_digits == 0 || fraction_digits == 3 || fraction_digits == 6);
  const double whole = std::floor(unix_seconds);
  const auto t = static_cast<std::time_t>(whole);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char seconds[32];
  std::strftime(seconds, sizeof seconds, "%Y-%m-%dT%H:%M:%S", &tm);
  if (fraction_digits == 0) return std::string(seconds) + "Z";
  // Truncated, not rounded: a fraction never carries into the next second.
  const double scale = fraction_digits == 3 ? 1e3 : 1e6;
  const long fraction =
      std::min(static_cast<long>((unix_seconds - whole) * scale), static_cast<long>(scale) - 1);
  char digits[24];  // a long in full, which the compiler cannot bound by the value
  std::snprintf(digits, sizeof digits, "%0*ld", fraction_digits, fraction);
  return std::string(seconds) + "." + digits + "Z";
}

}  // namespace pipescale
