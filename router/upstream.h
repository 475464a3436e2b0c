// Keep-alive HTTP/1.1 connections from one router thread to the model pods: a pool per pod
// address, reused across requests; an idle one the pod has closed (or died with) is dropped
// before use, and a request that fails on a reused connection before any answer is sent once
// more on a fresh one. One per event loop, so no locks.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "asio.h"
#include "common/result.h"

namespace pipescale::router {

struct UpstreamReply {
  unsigned status = 0;
  std::string body;
  std::string header_length;  // its Inference-Header-Content-Length (binary data), or ""
};

class UpstreamPool {
 public:
  explicit UpstreamPool(asio::any_io_executor executor) : executor_(std::move(executor)) {}
  // The event loop the pool's connections and their callers run on.
  const asio::any_io_executor& executor() const { return executor_; }

  // POSTs a body to http://`address``target`, written as `pieces` one after another (never
  // joined); with `header_length` its first bytes are JSON and the rest binary data (the
  // extension's Inference-Header-Content-Length), else all is JSON. kUnavailable when no
  // connection could be opened and none was tried before (nothing was sent: the caller may send
  // it elsewhere as new); kTransient when the pod resets the connection or does not answer within
  // `timeout` (it may have been served).
  asio::awaitable<Result<UpstreamReply>> Post(const std::string& address, std::string_view target,
                                              std::span<const std::string_view> pieces,
                                              std::optional<size_t> header_length,
                                              std::chrono::milliseconds timeout);
  // POSTs `body` (JSON), with the failures above.
  asio::awaitable<Result<UpstreamReply>> Post(const std::string& address, std::string_view target,
                                              const std::string& body,
                                              std::chrono::milliseconds timeout);
  // GETs http://`address``target`, with Post's failures.
  asio::awaitable<Result<UpstreamReply>> Get(const std::string& address, std::string_view target,
                                             std::chrono::milliseconds timeout);

 private:
  // An open connection and the buffer its answers are read through, kept with it.
  struct Connection {
    explicit Connection(const asio::any_io_executor& executor) : stream(executor) {}
    beast::tcp_stream stream;
    beast::flat_buffer buffer = ReadBuffer();
  };
  // The request line and headers in `head`, then `pieces`, on a pooled connection to `address`.
  asio::awaitable<Result<UpstreamReply>> Send(const std::string& address, const std::string& head,
                                              std::span<const std::string_view> pieces,
                                              std::chrono::milliseconds timeout);
  asio::awaitable<Result<std::unique_ptr<Connection>>> Connect(const std::string& address,
                                                               std::chrono::milliseconds timeout);

  asio::any_io_executor executor_;
  std::map<std::string, std::vector<std::unique_ptr<Connection>>, std::less<>> idle_;
};

}  // namespace pipescale::router
