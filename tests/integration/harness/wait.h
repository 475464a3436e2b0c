// Waiting on real processes in tests: poll a condition until it holds or a deadline passes.
#pragma once

#include <chrono>
#include <thread>

namespace pipescale::testing {

// True as soon as `pred` holds; false if it still does not at `deadline`.
template <typename Pred>
bool PollUntil(std::chrono::steady_clock::time_point deadline, Pred pred,
               std::chrono::milliseconds every = std::chrono::milliseconds(50)) {
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(every);
  }
  return pred();
}

template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(30),
                std::chrono::milliseconds every = std::chrono::milliseconds(50)) {
  return PollUntil(std::chrono::steady_clock::now() + timeout, pred, every);
}

}  // namespace pipescale::testing
