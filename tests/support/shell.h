// Running a shell command from a test (helm, kubectl, curl): its exit code and its output,
// stderr included. Header-only, so unit and integration tests share it without a library.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace pipescale::testing {

struct ShellResult {
  int code = 0;
  std::string out;  // stdout and stderr together
};

inline ShellResult RunShell(const std::string& command) {
  ShellResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed: " + command};
  std::array<char, 4096> buffer{};
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) r.out.append(buffer.data(), n);
  r.code = WEXITSTATUS(pclose(pipe));
  return r;
}

// The pid of the process listening on `ip`:8080 (a model server's or a router's, whose pod has
// that address on the local cluster), "" when none: what a test kills as a crash would.
inline std::string ListenerPid(const std::string& ip) {
  return RunShell("ss -Hltnp src " + ip + ":8080 | sed -n 's/.*pid=\\([0-9]*\\).*/\\1/p'").out;
}

}  // namespace pipescale::testing
