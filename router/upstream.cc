#include "upstream.h"

namespace pipescale::router {
namespace {

constexpr size_t kMaxIdlePerPod = 64;
constexpr size_t kMaxReplyBytes = 64 << 20;

Error Failed(const std::string& address, const std::string& what) {
  return Error{ErrorKind::kTransient, address + ": " + what};
}

}  // namespace

asio::awaitable<Result<std::unique_ptr<beast::tcp_stream>>> UpstreamPool::Connect(
    const std::string& address, std::chrono::milliseconds timeout) {
  const auto colon = address.rfind(':');
  beast::error_code ec;
  const auto ip = asio::ip::make_address(address.substr(0, colon), ec);
  if (ec || colon == std::string::npos) co_return Failed(address, "not an ip:port address");
  const auto port = static_cast<unsigned short>(std::atoi(address.c_str() + colon + 1));
  auto stream = std::make_unique<beast::tcp_stream>(executor_);
  stream->expires_after(timeout);
  co_await stream->async_connect(tcp::endpoint(ip, port), Redirect(ec));
  if (ec) co_return Failed(address, "connect: " + ec.message());
  stream->socket().set_option(tcp::no_delay(true), ec);
  co_return std::move(stream);
}

namespace {

// One request and its answer on an open connection; `keep` says whether it may be reused.
asio::awaitable<Result<UpstreamReply>> Exchange(beast::tcp_stream& stream,
                                                const HttpRequest& request,
                                                std::chrono::milliseconds timeout, bool& keep) {
  beast::error_code ec;
  stream.expires_after(timeout);
  co_await http::async_write(stream, request, Redirect(ec));
  if (ec) co_return Error{ErrorKind::kTransient, "send: " + ec.message()};
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxReplyBytes);
  co_await http::async_read(stream, buffer, parser, Redirect(ec));
  if (ec) co_return Error{ErrorKind::kTransient, "read: " + ec.message()};
  HttpResponse response = parser.release();
  keep = response.keep_alive();
  co_return UpstreamReply{response.result_int(), std::move(response.body())};
}

}  // namespace

asio::awaitable<Result<UpstreamReply>> UpstreamPool::Post(const std::string& address,
                                                          const std::string& target,
                                                          const std::string& body,
                                                          std::chrono::milliseconds timeout) {
  HttpRequest request{http::verb::post, target, 11};
  request.set(http::field::host, address);
  request.set(http::field::content_type, "application/json");
  request.keep_alive(true);
  request.body() = body;
  request.prepare_payload();
  co_return co_await Send(address, request, timeout);
}

asio::awaitable<Result<UpstreamReply>> UpstreamPool::Get(const std::string& address,
                                                         const std::string& target,
                                                         std::chrono::milliseconds timeout) {
  HttpRequest request{http::verb::get, target, 11};
  request.set(http::field::host, address);
  request.keep_alive(true);
  co_return co_await Send(address, request, timeout);
}

asio::awaitable<Result<UpstreamReply>> UpstreamPool::Send(const std::string& address,
                                                          const HttpRequest& request,
                                                          std::chrono::milliseconds timeout) {
  // A pooled connection first; if it fails before an answer, the pod may have closed it
  // while idle: once more on a fresh connection.
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::unique_ptr<beast::tcp_stream> stream;
    bool reused = false;
    auto& idle = idle_[address];
    if (attempt == 0 && !idle.empty()) {
      stream = std::move(idle.back());
      idle.pop_back();
      reused = true;
    } else {
      auto connected = co_await Connect(address, timeout);
      if (!connected) co_return connected.error();
      stream = std::move(*connected);
    }
    bool keep = false;
    auto reply = co_await Exchange(*stream, request, timeout, keep);
    if (reply.ok()) {
      if (keep && idle_[address].size() < kMaxIdlePerPod)
        idle_[address].push_back(std::move(stream));
      co_return reply;
    }
    if (!reused) co_return Failed(address, reply.error().message);
  }
  co_return Failed(address, "unreachable");
}

}  // namespace pipescale::router
