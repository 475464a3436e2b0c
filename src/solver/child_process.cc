#include "solver/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>  // sigabbrev_np
#include <system_error>

#include "common/guard.h"
#include "common/result.h"
#include "optimizer/milp_text.h"

// POSIX declares it nowhere; posix_spawn hands it to the child.
// NOLINTNEXTLINE(readability-redundant-declaration,cppcoreguidelines-avoid-non-const-global-variables)
extern char** environ;

namespace pipescale::solver {
namespace {

using Clock = std::chrono::steady_clock;

// strerror's words, from a function safe in threads.
std::string Why(int error) { return std::generic_category().message(error); }

struct Child {
  pid_t pid = -1;
  int input = -1;   // the child's stdin, ours to write
  int output = -1;  // the child's stdout, ours to read
};

Result<Child> Spawn(const std::vector<std::string>& command) {
  int to_child[2], from_child[2];
  if (pipe2(to_child, O_CLOEXEC) != 0) return Error{ErrorKind::kTransient, Why(errno)};
  if (pipe2(from_child, O_CLOEXEC) != 0) {
    close(to_child[0]);
    close(to_child[1]);
    return Error{ErrorKind::kTransient, Why(errno)};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  // The operator's threads block SIGTERM for its sigwait; the child starts with none blocked.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> argv;
  argv.reserve(command.size() + 1);
  for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  Child child;
  const int rc = posix_spawn(&child.pid, argv[0], &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(to_child[0]);
  close(from_child[1]);
  if (rc != 0) {
    close(to_child[1]);
    close(from_child[0]);
    return Error{ErrorKind::kTransient, "cannot start " + command[0] + ": " + Why(rc)};
  }
  child.input = to_child[1];
  child.output = from_child[0];
  fcntl(child.input, F_SETFL, O_NONBLOCK);
  fcntl(child.output, F_SETFL, O_NONBLOCK);
  return child;
}

// Writes `request` to the child while reading its answer, until it closes its stdout or the
// deadline passes (false). A write the child refuses (it died: EPIPE) ends the writing only.
bool Exchange(Child& child, const std::string& request, std::string& answer,
              Clock::time_point deadline) {
  size_t written = 0;
  char buffer[65536];
  for (;;) {
    pollfd fds[2] = {{child.output, POLLIN, 0}, {child.input, POLLOUT, 0}};
    const nfds_t count = child.input >= 0 ? 2 : 1;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    if (poll(fds, count, static_cast<int>(left.count())) < 0 && errno != EINTR) return false;
    if (count == 2 && fds[1].revents != 0) {
      const ssize_t n = write(child.input, request.data() + written, request.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if ((n < 0 && errno != EAGAIN) || written == request.size()) {
        close(child.input);  // done, or the child is gone: it sees the end of its input
        child.input = -1;
      }
    }
    if (fds[0].revents != 0) {
      const ssize_t n = read(child.output, buffer, sizeof buffer);
      if (n == 0) return true;
      if (n > 0) answer.append(buffer, static_cast<size_t>(n));
      if (n < 0 && errno != EAGAIN && errno != EINTR) return true;
    }
  }
}

// Why the child ended as it did, or "" when it exited 0.
std::string HowItEnded(int status) {
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    return "the solver process died of signal " + std::to_string(signal) + " (" +
           sigabbrev_np(signal) + ")";
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return "the solver process exited " + std::to_string(WEXITSTATUS(status));
  }
  return "";
}

optimizer::MilpSolution Failed(std::string why) {
  ReportPanic("milp-solver", why);
  optimizer::MilpSolution failed;
  failed.status = optimizer::MilpStatus::kFailed;
  failed.failure = std::move(why);
  return failed;
}

optimizer::MilpSolution SolveInChild(const std::vector<std::string>& command,
                                     const optimizer::Milp& milp,
                                     const optimizer::MilpOptions& options) {
  auto child = Spawn(command);
  if (!child) return Failed(child.error().message);
  // A write to a child that died raises SIGPIPE, which would end the operator: blocked in this
  // thread while writing, and a pending one taken before it is unblocked.
  sigset_t pipe_signal, before;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &before);
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(2 * options.time_limit_seconds + 5));
  std::string answer;
  const bool in_time = Exchange(*child, optimizer::WriteMilp(milp, options), answer, deadline);
  const timespec now{};
  while (sigtimedwait(&pipe_signal, nullptr, &now) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (child->input >= 0) close(child->input);
  close(child->output);
  if (!in_time) kill(child->pid, SIGKILL);
  int status = 0;
  while (waitpid(child->pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!in_time) return Failed("the solver process overran its time limit and was killed");
  if (std::string why = HowItEnded(status); !why.empty()) return Failed(why);
  auto solution = optimizer::ReadMilpSolution(answer, milp.vars().size());
  if (!solution) return Failed("the solver process's answer: " + solution.error().message);
  return std::move(*solution);
}

}  // namespace

optimizer::MilpSolver ChildProcessSolver(std::vector<std::string> command) {
  return [command = std::move(command)](const optimizer::Milp& milp,
                                        const optimizer::MilpOptions& options) {
    return SolveInChild(command, milp, options);
  };
}

int ServeMilp(std::FILE* in, std::FILE* out) {
  std::string text;
  char buffer[65536];
  for (size_t n = 0; (n = std::fread(buffer, 1, sizeof buffer, in)) > 0;) text.append(buffer, n);
  auto problem = optimizer::ReadMilp(text);
  if (!problem) {
    std::fprintf(stderr, "pipescale: --solve-milp: %s\n", problem.error().message.c_str());
    return 2;
  }
  const std::string solution =
      optimizer::WriteMilpSolution(optimizer::SolveMilp(problem->first, problem->second));
  std::fwrite(solution.data(), 1, solution.size(), out);
  return std::fflush(out) == 0 ? 0 : 1;
}

}  // namespace pipescale::solver
