#include "common/guard.h"

#include <exception>
#include <mutex>
#include <set>
#include <utility>

#include "common/log.h"

namespace pipescale {
namespace {

struct Panics {
  std::mutex mu;
  std::map<std::string, std::uint64_t> counts;
  std::set<std::pair<std::string, std::string>> logged;  // (component, message)
};

// Never destroyed: a detached thread may report while the process exits.
Panics& State() {
  // NOLINTNEXTLINE(cppcoreguidelines-owning-memory,cppcoreguidelines-avoid-non-const-global-variables)
  static auto* state = new Panics;
  return *state;
}

// A bug that throws the same message at every request would otherwise keep `logged` growing
// only by distinct messages; this bounds even that.
constexpr size_t kMaxLogged = 1000;

}  // namespace

void ReportPanic(std::string_view component, std::string_view what) {
  Panics& state = State();
  bool first = false;
  {
    std::lock_guard lock(state.mu);
    ++state.counts[std::string(component)];
    if (state.logged.size() < kMaxLogged) {
      first = state.logged.emplace(std::string(component), std::string(what)).second;
    }
  }
  if (first) {
    Log("error", "a guard caught a failure (a bug); carrying on",
        {{"component", std::string(component)}, {"error", std::string(what)}});
  }
}

std::map<std::string, std::uint64_t> PanicCounts() {
  Panics& state = State();
  std::lock_guard lock(state.mu);
  return state.counts;
}

std::string CurrentExceptionMessage() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}

}  // namespace pipescale
