// The router's front door: HTTP/1.1 with keep-alive on one event loop per thread, each with
// its own listening socket on the same port (SO_REUSEPORT: the kernel spreads connections),
// its own pool of connections to the pods and its own handler; nothing is locked on the way.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "asio.h"
#include "handler.h"

namespace pipescale::router {

class Server {
 public:
  Server(RouterConfig& config, RouterMetrics& metrics, int threads);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  Server(Server&&) = delete;
  Server& operator=(Server&&) = delete;

  // Binds host:port (port 0: any) on every thread's socket; the port bound, or an error.
  Result<unsigned short> Listen(const std::string& host, unsigned short port);
  void Start();
  // Serves on for `delay` while telling clients to go (not ready, connections closed after
  // each answer), then stops accepting, lets the requests in flight finish within `grace` and
  // stops.
  void Drain(std::chrono::milliseconds delay, std::chrono::milliseconds grace);

 private:
  struct Loop;
  RouterConfig& config_;
  std::vector<std::unique_ptr<Loop>> loops_;
};

}  // namespace pipescale::router
