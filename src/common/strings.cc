#include "common/strings.h"

#include <cstdarg>
#include <cstdio>

#include "common/result.h"

namespace pipescale {

std::string StrFormat(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int size = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string out(size > 0 ? static_cast<size_t>(size) : 0, '\0');
  if (size > 0) std::vsnprintf(out.data(), out.size() + 1, format, args);
  va_end(args);
  return out;
}

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalid:
      return "Invalid";
    case ErrorKind::kNotFound:
      return "NotFound";
    case ErrorKind::kConflict:
      return "Conflict";
    case ErrorKind::kTransient:
      return "Transient";
    case ErrorKind::kExpired:
      return "Expired";
  }
  return "Unknown";
}

}  // namespace pipescale
