#include "common/strings.h"

#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "common/result.h"

namespace pipescale {
namespace {

// Length of the valid UTF-8 sequence at the start of `s` (1-4), or 0 when it is not one:
// truncated, overlong, a surrogate or beyond U+10FFFF. `code` receives the code point.
size_t Utf8Sequence(std::string_view s, char32_t& code) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  size_t length = 0;
  char32_t min = 0;
  if (lead < 0x80) {
    code = lead;
    return 1;
  }
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    code = lead & 0x1F;
    min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    code = lead & 0x0F;
    min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    code = lead & 0x07;
    min = 0x10000;
  } else {
    return 0;
  }
  if (s.size() < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i) & 0x3F);
  }
  const bool surrogate = code >= 0xD800 && code <= 0xDFFF;
  if (code < min || code > 0x10FFFF || surrogate) return 0;
  return length;
}

// C1 controls and the characters that reorder text when displayed (Trojan Source).
bool IsInvisibleControl(char32_t c) {
  return (c >= 0x80 && c <= 0x9F) || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069) ||
         c == 0x200E || c == 0x200F || c == 0x061C;
}

// Appends the first `max_chars` characters of `text` escaped; true when it cut the rest.
bool AppendEscaped(std::string_view text, size_t max_chars, std::string& out) {
  size_t chars = 0;
  size_t at = 0;
  while (at < text.size() && chars < max_chars) {
    char32_t code = 0;
    const size_t length = Utf8Sequence(text.substr(at), code);
    if (length == 0 || code < 0x20 || code == 0x7F) {
      out += StrFormat("\\x%02X", static_cast<unsigned char>(text[at]));
      at += 1;
    } else if (IsInvisibleControl(code)) {
      out += StrFormat("\\u{%04X}", static_cast<unsigned>(code));
      at += length;
    } else {
      if (code == '"' || code == '\\') out += '\\';
      out.append(text.substr(at, length));
      at += length;
    }
    ++chars;
  }
  return at < text.size();
}

}  // namespace

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

bool IsValidUtf8(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    char32_t code = 0;
    const size_t length = Utf8Sequence(text.substr(at), code);
    if (length == 0) return false;
    at += length;
  }
  return true;
}

std::string QuoteUserText(std::string_view text, size_t max_chars) {
  std::string out = "\"";
  const bool cut = AppendEscaped(text, max_chars, out);
  out += '"';
  if (cut) out += "…";
  return out;
}

std::string EscapeUserText(std::string_view text, size_t max_chars) {
  std::string out;
  if (AppendEscaped(text, max_chars, out)) out += "…";
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
    case ErrorKind::kUnavailable:
      return "Unavailable";
  }
  return "Unknown";
}

std::string Fingerprint(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (const char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return StrFormat("%016llx", static_cast<unsigned long long>(hash));
}

}  // namespace pipescale
