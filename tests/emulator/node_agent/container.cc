#include "node_agent/container.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace pipescale::emulator {
namespace {

namespace fs = std::filesystem;

// What the child needs, prepared before fork: the agent has threads, so the child may only
// make system calls until it execs (no allocation).
struct Prepared {
  std::vector<std::string> strings;  // owns what argv and envp point into
  std::vector<char*> argv, envp;
  std::string sa_dir, log_file, binary, hostname;
};

// In the child, before exec: a private mount namespace whose /run is a fresh tmpfs holding
// only the service-account files (/var/run is a link to /run), so the process finds its
// token where client libraries look, and nothing on the machine changes.
bool MountServiceAccount(const char* source) {
  if (unshare(CLONE_NEWNS) != 0) return false;
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return false;
  if (mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") != 0) return false;
  for (const char* dir : {"/run/secrets", "/run/secrets/kubernetes.io",
                          "/run/secrets/kubernetes.io/serviceaccount"}) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return false;
  }
  return mount(source, "/run/secrets/kubernetes.io/serviceaccount", nullptr, MS_BIND, nullptr) == 0;
}

[[noreturn]] void Exec(const Prepared& p) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // the pods go when the agent goes, as with a runtime
  const int log = open(p.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (log >= 0) {
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    close(log);
  }
  if (!p.hostname.empty() &&
      (unshare(CLONE_NEWUTS) != 0 || sethostname(p.hostname.data(), p.hostname.size()) != 0)) {
    dprintf(STDERR_FILENO, "node agent: cannot set the pod's hostname (errno %d)\n", errno);
    _exit(126);
  }
  if (!p.sa_dir.empty() && !MountServiceAccount(p.sa_dir.c_str())) {
    dprintf(STDERR_FILENO, "node agent: cannot mount the service account (errno %d)\n", errno);
    _exit(126);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(p.binary.c_str(), p.argv.data(), p.envp.data());
  dprintf(STDERR_FILENO, "node agent: cannot run %s (errno %d)\n", p.binary.c_str(), errno);
  _exit(127);
}

Prepared Prepare(const Launch& launch) {
  Prepared p;
  p.binary = launch.binary;
  p.log_file = launch.log_file;
  p.hostname = launch.hostname;
  p.strings.push_back(launch.binary);
  for (const auto& a : launch.args) p.strings.push_back(a);
  const size_t argc = p.strings.size();
  for (const auto& [k, v] : launch.env) p.strings.push_back(k + "=" + v);
  for (size_t i = 0; i < p.strings.size(); ++i) {
    (i < argc ? p.argv : p.envp).push_back(p.strings[i].data());
  }
  p.argv.push_back(nullptr);
  p.envp.push_back(nullptr);
  if (!launch.service_account.empty()) {
    p.sa_dir = launch.work_dir + "/serviceaccount";
    fs::create_directories(p.sa_dir);
    for (const auto& [name, content] : launch.service_account) {
      std::ofstream(p.sa_dir + "/" + name, std::ios::binary | std::ios::trunc) << content;
    }
  }
  return p;
}

}  // namespace

Container::~Container() {
  if (pid_ > 0 && !exit_code_) {
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool Container::Start(const Launch& launch, std::string& error) {
  const Prepared prepared = Prepare(launch);
  pid_ = fork();
  if (pid_ < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid_ == 0) Exec(prepared);
  setpgid(pid_, pid_);
  exit_code_.reset();
  stopping_since_.reset();
  started_ = std::chrono::system_clock::now();
  return true;
}

bool Container::Running() {
  if (pid_ <= 0 || exit_code_) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
  return true;
}

bool Container::Stop(std::chrono::seconds grace) {
  if (!Running()) return true;
  const auto now = std::chrono::steady_clock::now();
  if (!stopping_since_) {
    stopping_since_ = now;
    kill(-pid_, SIGTERM);
  } else if (now - *stopping_since_ >= grace) {
    kill(-pid_, SIGKILL);
  }
  return !Running();
}

}  // namespace pipescale::emulator
