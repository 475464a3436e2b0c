// Structured logs on stderr: `time level message key=value ...` or one JSON object per line.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace pipescale {

enum class LogFormat { kText, kJson };

// Process-wide; set once at startup, before threads start.
void SetLogFormat(LogFormat format);

using LogField = std::pair<std::string_view, std::string>;

// Thread-safe: each line is written whole.
void Log(std::string_view level, std::string_view message,
         std::initializer_list<LogField> fields = {});

}  // namespace pipescale
