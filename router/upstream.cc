#include "upstream.h"

#include <sys/socket.h>

#include <cerrno>
#include <numeric>

#include "common/flags.h"
#include "routing/binary.h"

namespace pipescale::router {
namespace {

constexpr size_t kMaxIdlePerPod = 64;
constexpr size_t kMaxReplyBytes = 64 << 20;

Error Failed(const std::string& address, const std::string& what) {
  return Error{ErrorKind::kTransient, address + ": " + what};
}

// Whether an idle connection is still open: the peer has neither closed it (a pod or router that
// exited closes every socket it held) nor sent anything unasked. A non-blocking peek, so a dead
// connection is dropped before a request is written into it and lost with it.
bool StillOpen(beast::tcp_stream& stream) {
  char byte = 0;
  const ssize_t n =
      ::recv(stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT | MSG_NOSIGNAL);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// The request line and headers, written by hand: a call to a pod needs four, and Beast's field
// container would allocate for each on every call. HTTP/1.1 keeps the connection open.
std::string Head(std::string_view method, std::string_view target, const std::string& address,
                 std::optional<size_t> content_length, std::optional<size_t> header_length) {
  std::string head;
  head.reserve(160 + target.size());
  ((((head += method) += ' ') += target) += " HTTP/1.1\r\nHost: ") += address;
  if (content_length) {
    head += header_length ? "\r\nContent-Type: application/octet-stream"
                          : "\r\nContent-Type: application/json";
    (head += "\r\nContent-Length: ") += std::to_string(*content_length);
  }
  if (header_length) {
    (((head += "\r\n") += routing::kHeaderLengthField) += ": ") += std::to_string(*header_length);
  }
  head += "\r\n\r\n";
  return head;
}

// One request and its answer on an open connection; `keep` says whether it may be reused.
asio::awaitable<Result<UpstreamReply>> Exchange(beast::tcp_stream& stream,
                                                beast::flat_buffer& buffer,
                                                const std::vector<asio::const_buffer>& request,
                                                std::chrono::milliseconds timeout, bool& keep) {
  beast::error_code ec;
  stream.expires_after(timeout);
  co_await asio::async_write(stream, request, Redirect(ec));
  if (ec) co_return Error{ErrorKind::kTransient, "send: " + ec.message()};
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxReplyBytes);
  co_await http::async_read(stream, buffer, parser, Redirect(ec));
  if (ec) co_return Error{ErrorKind::kTransient, "read: " + ec.message()};
  http::response<http::string_body> response = parser.release();
  keep = response.keep_alive();
  const auto length = response[beast::string_view(routing::kHeaderLengthField.data(),
                                                  routing::kHeaderLengthField.size())];
  co_return UpstreamReply{response.result_int(), std::move(response.body()),
                          std::string(length.data(), length.size())};
}

}  // namespace

asio::awaitable<Result<std::unique_ptr<UpstreamPool::Connection>>> UpstreamPool::Connect(
    const std::string& address, std::chrono::milliseconds timeout) {
  // An address from the cluster or a flag: a port that is not one is an error, never port 0.
  const auto host_port = ParseHostPort("address", address, 1);
  beast::error_code ec;
  const auto ip = host_port ? asio::ip::make_address(host_port->host, ec) : asio::ip::address();
  if (!host_port || ec) co_return Failed(address, "not an ip:port address");
  auto connection = std::make_unique<Connection>(executor_);
  connection->stream.expires_after(timeout);
  co_await connection->stream.async_connect(tcp::endpoint(ip, host_port->port), Redirect(ec));
  if (ec) co_return Failed(address, "connect: " + ec.message());
  connection->stream.socket().set_option(tcp::no_delay(true), ec);
  co_return std::move(connection);
}

asio::awaitable<Result<UpstreamReply>> UpstreamPool::Post(const std::string& address,
                                                          std::string_view target,
                                                          std::span<const std::string_view> pieces,
                                                          std::optional<size_t> header_length,
                                                          std::chrono::milliseconds timeout) {
  const size_t bytes = std::accumulate(pieces.begin(), pieces.end(), size_t{0},
                                       [](size_t n, std::string_view p) { return n + p.size(); });
  const std::string head = Head("POST", target, address, bytes, header_length);
  co_return co_await Send(address, head, pieces, timeout);
}

asio::awaitable<Result<UpstreamReply>> UpstreamPool::Post(const std::string& address,
                                                          std::string_view target,
                                                          const std::string& body,
                                                          std::chrono::milliseconds timeout) {
  const std::string_view piece = body;
  co_return co_await Post(address, target, std::span(&piece, 1), std::nullopt, timeout);
}

asio::awaitable<Result<UpstreamReply>> UpstreamPool::Get(const std::string& address,
                                                         std::string_view target,
                                                         std::chrono::milliseconds timeout) {
  const std::string head = Head("GET", target, address, std::nullopt, std::nullopt);
  co_return co_await Send(address, head, {}, timeout);
}

asio::awaitable<Result<UpstreamReply>> UpstreamPool::Send(const std::string& address,
                                                          const std::string& head,
                                                          std::span<const std::string_view> pieces,
                                                          std::chrono::milliseconds timeout) {
  std::vector<asio::const_buffer> request;
  request.reserve(1 + pieces.size());
  request.emplace_back(head.data(), head.size());
  for (std::string_view p : pieces) {
    if (!p.empty()) request.emplace_back(p.data(), p.size());
  }
  // A pooled connection first; if it fails before an answer, the pod may have closed it
  // while idle: once more on a fresh connection.
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::unique_ptr<Connection> connection;
    bool reused = false;
    auto& idle = idle_[address];
    while (attempt == 0 && !idle.empty() && !connection) {
      connection = std::move(idle.back());
      idle.pop_back();
      if (!StillOpen(connection->stream)) connection.reset();
    }
    if (connection) {
      reused = true;
    } else {
      auto connected = co_await Connect(address, timeout);
      if (!connected) {
        // Nothing of this request left: a later attempt follows a reused connection's failure,
        // which may have been after the pod read it.
        if (attempt == 0) co_return Error{ErrorKind::kUnavailable, connected.error().message};
        co_return connected.error();
      }
      connection = std::move(*connected);
    }
    bool keep = false;
    auto reply = co_await Exchange(connection->stream, connection->buffer, request, timeout, keep);
    if (reply.ok()) {
      if (keep && idle_[address].size() < kMaxIdlePerPod) {
        idle_[address].push_back(std::move(connection));
      }
      co_return reply;
    }
    if (!reused) co_return Failed(address, reply.error().message);
  }
  co_return Failed(address, "unreachable");
}

}  // namespace pipescale::router
