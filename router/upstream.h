// Keep-alive HTTP/1.1 connections from one router thread to the model pods: a pool per pod
// address, reused across requests; a request that fails on a reused connection before any
// answer (the pod closed it while idle) is sent once more on a fresh one. One per event loop,
// so no locks.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "asio.h"
#include "common/result.h"

namespace pipescale::router {

struct UpstreamReply {
  unsigned status = 0;
  std::string body;
};

class UpstreamPool {
 public:
  explicit UpstreamPool(asio::any_io_executor executor) : executor_(std::move(executor)) {}
  // The event loop the pool's connections and their callers run on.
  const asio::any_io_executor& executor() const { return executor_; }

  // POSTs `body` (JSON) to http://`address``target`; kTransient when the pod cannot be
  // reached, resets the connection or does not answer within `timeout`.
  asio::awaitable<Result<UpstreamReply>> Post(const std::string& address, const std::string& target,
                                              const std::string& body,
                                              std::chrono::milliseconds timeout);
  // GETs http://`address``target`, with Post's failures.
  asio::awaitable<Result<UpstreamReply>> Get(const std::string& address, const std::string& target,
                                             std::chrono::milliseconds timeout);

 private:
  // `request` on a pooled connection to `address`; the caller keeps it alive until the answer.
  asio::awaitable<Result<UpstreamReply>> Send(const std::string& address,
                                              const HttpRequest& request,
                                              std::chrono::milliseconds timeout);
  asio::awaitable<Result<std::unique_ptr<beast::tcp_stream>>> Connect(
      const std::string& address, std::chrono::milliseconds timeout);

  asio::any_io_executor executor_;
  std::map<std::string, std::vector<std::unique_ptr<beast::tcp_stream>>> idle_;
};

}  // namespace pipescale::router
