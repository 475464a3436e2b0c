// String helpers the standard library of g++ 12 lacks (no std::format yet).
#pragma once

#include <string>

namespace pipescale {

// printf-style formatting into a std::string of whatever length it needs.
std::string StrFormat(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace pipescale
