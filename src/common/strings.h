// String helpers the standard library of g++ 12 lacks (no std::format yet).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace pipescale {

// printf-style formatting into a std::string of whatever length it needs.
std::string StrFormat(const char* format, ...) __attribute__((format(printf, 1, 2)));

// How much of a user's text a message quotes: enough to recognise it, never a whole document.
inline constexpr size_t kQuotedChars = 64;

// Text from a user (a name, a flag, a document's string) for an error message or a log line:
// in double quotes, with '"' and '\' escaped, control characters, DEL and bytes that are not
// valid UTF-8 written as \xNN, C1 and bidirectional controls as \u{NNNN}, and cut after
// `max_chars` characters with "…" after the closing quote. Messages then stay one line of
// printable, valid UTF-8 whatever a document holds, and a quoted name is never mistaken for
// the message around it.
std::string QuoteUserText(std::string_view text, size_t max_chars = kQuotedChars);

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points beyond
// U+10FFFF), as JSON requires of every string.
bool IsValidUtf8(std::string_view text);

// The same escaping and shortening without the quotes, for a library's message that may
// carry user bytes (a parser's "last read" token).
std::string EscapeUserText(std::string_view text, size_t max_chars);

// A short fingerprint of `text` (FNV-1a, 16 hex digits), to tell when a remembered input
// changed; not a checksum against anyone trying.
std::string Fingerprint(std::string_view text);

}  // namespace pipescale
