// Last-resort guards where a thread, a loop or a coroutine begins. A throw that reaches one is
// a bug: it is counted by component, logged the first time its message is seen, and the
// process carries on, instead of std::terminate taking every pipeline down with one.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <thread>

namespace pipescale {

// Records a throw a guard of `component` caught: counts it, and logs it unless the same
// component already logged the same message (a bug met by every request says so once).
void ReportPanic(std::string_view component, std::string_view what);

// Throws caught so far, by component: what /metrics shows as pipescale_panics_total.
std::map<std::string, std::uint64_t> PanicCounts();

// The message of the exception being handled; call it only inside a catch block.
std::string CurrentExceptionMessage();

// Runs `body`; a throw is reported for `component` and gives false.
template <typename F>
bool Guard(std::string_view component, F&& body) noexcept {
  try {
    body();
    return true;
  } catch (...) {
    ReportPanic(component, CurrentExceptionMessage());
    return false;
  }
}

struct RestartBackoff {
  std::chrono::milliseconds min{100};
  std::chrono::milliseconds max{30000};
};

// Runs `loop` until it returns or `stop` is set; after each throw (reported for `component`)
// waits, doubling from backoff.min to backoff.max, and runs it again.
template <typename F>
void RunWithRestarts(std::string_view component, const std::atomic<bool>& stop, F&& loop,
                     RestartBackoff backoff = {}) noexcept {
  auto delay = backoff.min;
  while (!stop.load() && !Guard(component, loop)) {
    const auto until = std::chrono::steady_clock::now() + delay;
    while (!stop.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    delay = std::min(delay * 2, backoff.max);
  }
}

}  // namespace pipescale
