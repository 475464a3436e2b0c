#include "common/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "common/time.h"

namespace pipescale {
namespace {

LogFormat g_format = LogFormat::kText;  // NOLINT: set once before threads start

std::string JsonEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string Now() {
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  return FormatRfc3339(std::chrono::duration<double>(since_epoch).count(), 3);
}

}  // namespace

void SetLogFormat(LogFormat format) { g_format = format; }

void Log(std::string_view level, std::string_view message, std::initializer_list<LogField> fields) {
  std::string line;
  if (g_format == LogFormat::kJson) {
    line = R"({"ts":")" + Now() + R"(","level":")" + JsonEscape(level) + R"(","msg":")" +
           JsonEscape(message) + "\"";
    for (const auto& [k, v] : fields)
      line += ",\"" + JsonEscape(k) + "\":\"" + JsonEscape(v) + "\"";
    line += "}\n";
  } else {
    line = Now() + " " + std::string(level) + " " + std::string(message);
    for (const auto& [k, v] : fields) line += " " + std::string(k) + "=" + v;
    line += "\n";
  }
  static std::mutex mu;
  std::lock_guard lock(mu);
  std::fputs(line.c_str(), stderr);
}

}  // namespace pipescale
