// A child process for tests: started with arguments and environment, stopped with a signal,
// its exit status collected. Its output goes to a log file the test can show on failure.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace pipescale::testing {

class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::string& log_file);
  ~Process();  // SIGKILL if still running
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Sends `signal` and waits up to `timeout`; the exit code, or nullopt if it did not exit.
  std::optional<int> Stop(int signal, std::chrono::milliseconds timeout);
  bool Running();
  pid_t pid() const { return pid_; }
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  std::string log_file_;
  std::optional<int> status_;
};

// A file's whole text, or "" when it cannot be read.
std::string ReadFile(const std::string& file);

// The ports a process of ours wrote to its --port-file ("PORT [METRICS_PORT]", written whole
// by a rename), once it has; empty if it has not within `timeout`.
std::vector<int> WaitForPorts(const std::string& file, std::chrono::milliseconds timeout);

// A TCP port nothing listens on right now.
int FreePort();

// The body of GET http://127.0.0.1:port/path, with the status code; code 0 when unreachable.
std::pair<int, std::string> HttpGet(int port, const std::string& path);

// The sum of a counter's series in a Prometheus text exposition whose labels contain `match`
// (all of them when it is empty); 0 when there is none.
double ExposedSum(const std::string& exposition, const std::string& name, const std::string& match);

}  // namespace pipescale::testing
