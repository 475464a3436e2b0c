#include "common/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

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
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms.count()));
  return out;
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
