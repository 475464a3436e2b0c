// One container of a pod as a local process: the image's binary with the container's args
// and environment, bound to the pod's loopback address, the service-account files at the
// in-cluster path in a private mount namespace, stopped with the pod's grace period.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pipescale::emulator {

struct Launch {
  std::string binary;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;  // the whole environment of the process
  // Files to show at /var/run/secrets/kubernetes.io/serviceaccount (name -> content); none:
  // no private mount namespace.
  std::map<std::string, std::string> service_account;
  std::string work_dir;  // holds the files above and the log
  std::string log_file;
  // The pod's name as the process's hostname (a private UTS namespace), as a container
  // runtime sets it; empty: the machine's.
  std::string hostname;
};

class Container {
 public:
  Container() = default;
  ~Container();
  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;

  // Starts the process; false (with `error` set) when it cannot be forked.
  bool Start(const Launch& launch, std::string& error);
  // True while the process runs; reaps it when it has exited.
  bool Running();
  std::optional<int> exit_code() const { return exit_code_; }
  // SIGTERM to its process group, SIGKILL once `grace` has passed since the first call;
  // true once it has exited.
  bool Stop(std::chrono::seconds grace);
  std::chrono::system_clock::time_point started() const { return started_; }

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::optional<std::chrono::steady_clock::time_point> stopping_since_;
  std::chrono::system_clock::time_point started_;
};

}  // namespace pipescale::emulator
