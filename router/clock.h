// The router's one clock for what it times in milliseconds: deadlines, peers' reports, ejections.
#pragma once

#include <chrono>

namespace pipescale::router {

inline double SteadyNowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace pipescale::router
