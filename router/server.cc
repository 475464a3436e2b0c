#include "server.h"

#include <thread>

#include "common/guard.h"
#include "guards.h"
#include "routing/request.h"

namespace pipescale::router {
namespace {

using namespace std::chrono_literals;

asio::awaitable<void> Session(tcp::socket socket, PipelineHandler& handler, size_t max_body) {
  beast::tcp_stream stream(std::move(socket));
  beast::error_code ec;
  stream.socket().set_option(tcp::no_delay(true), ec);
  beast::flat_buffer buffer = ReadBuffer();
  const Responder respond = [&handler](const HttpRequest& request) {
    return handler.Handle(request);
  };
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(max_body);
    stream.expires_after(120s);  // an idle keep-alive connection, or a client too slow to send
    co_await http::async_read(stream, buffer, parser, Redirect(ec));
    if (ec == http::error::body_limit) {
      ClientResponse too_big{http::status::payload_too_large, 11};
      too_big.body().text = routing::ErrorBody("the request body is larger than " +
                                               std::to_string(max_body) + " bytes");
      too_big.prepare_payload();
      co_await http::async_write(stream, too_big, Redirect(ec));
      break;
    }
    if (ec) break;  // closed, timed out or not HTTP: nothing to answer
    const HttpRequest request = parser.release();
    ClientResponse response = co_await AnswerOrInternalError(respond, request);
    response.keep_alive(request.keep_alive() && !handler.draining());
    response.prepare_payload();
    stream.expires_after(120s);
    co_await http::async_write(stream, response, Redirect(ec));
    if (ec || !response.keep_alive()) break;
  }
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
}

}  // namespace

struct Server::Loop {
  asio::io_context context{1};
  tcp::acceptor acceptor{context};
  UpstreamPool pool{context.get_executor()};
  PipelineHandler handler;
  const size_t max_body;
  std::thread thread;
  std::atomic<bool> stopping{false};

  Loop(RouterConfig& config, RouterMetrics& metrics, std::uint64_t seed)
      : handler(config, metrics, pool, seed), max_body(config.max_body_bytes) {}

  asio::awaitable<void> Accept() {
    for (;;) {
      beast::error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(Redirect(ec));
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      if (ec) continue;  // e.g. too many open files: the next may succeed
      asio::co_spawn(context, Session(std::move(socket), handler, max_body),
                     ReportThrow{"router-connection"});
    }
  }

  void Stop() {
    stopping = true;
    context.stop();
  }
};

Server::Server(RouterConfig& config, RouterMetrics& metrics, int threads) : config_(config) {
  for (int i = 0; i < std::max(1, threads); ++i) {
    loops_.push_back(std::make_unique<Loop>(config, metrics, 0x9e3779b97f4a7c15ULL * (i + 1)));
  }
}

Server::~Server() {
  for (auto& loop : loops_) loop->Stop();
  for (auto& loop : loops_) {
    if (loop->thread.joinable()) loop->thread.join();
  }
}

Result<unsigned short> Server::Listen(const std::string& host, unsigned short port) {
  beast::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) return Error{ErrorKind::kInvalid, "not an IP address: " + host};
  for (auto& loop : loops_) {
    tcp::acceptor& a = loop->acceptor;
    a.open(address.is_v6() ? tcp::v6() : tcp::v4(), ec);
    a.set_option(tcp::acceptor::reuse_address(true), ec);
    const int one = 1;
    ::setsockopt(a.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    a.bind(tcp::endpoint(address, port), ec);
    if (ec)
      return Error{ErrorKind::kInvalid,
                   "cannot listen on " + host + ":" + std::to_string(port) + ": " + ec.message()};
    a.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return Error{ErrorKind::kInvalid, "cannot listen: " + ec.message()};
    port = a.local_endpoint().port();  // the next threads share the port the first was given
  }
  return port;
}

void Server::Start() {
  for (auto& loop : loops_) {
    asio::co_spawn(loop->context, loop->Accept(), ReportThrow{"router-accept"});
    // A handler that throws out of run() is a bug; the loop runs on, its other connections
    // with it (asio allows run() again after a throw).
    loop->thread = std::thread([l = loop.get()] {
      RunWithRestarts("router-loop", l->stopping, [l] { l->context.run(); },
                      {.min = std::chrono::milliseconds(1), .max = std::chrono::milliseconds(100)});
    });
  }
}

void Server::Drain(std::chrono::milliseconds delay, std::chrono::milliseconds grace) {
  // Clients learn of the shutdown from the pod's deletion and the failing readiness; until
  // they have, what they send is still served, on connections closed after each answer.
  config_.draining = true;
  std::this_thread::sleep_for(delay);
  for (auto& loop : loops_) {
    asio::post(loop->context, [l = loop.get()] {
      beast::error_code ec;
      l->acceptor.close(ec);
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (config_.in_flight.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  for (auto& loop : loops_) loop->Stop();
  for (auto& loop : loops_) {
    if (loop->thread.joinable()) loop->thread.join();
  }
}

}  // namespace pipescale::router
