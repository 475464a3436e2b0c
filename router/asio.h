// Boost.Asio and Beast for the router's shell, in one place: the include order Boost 1.74
// needs with GCC 12 (awaitable.hpp uses std::exchange without <utility>) and short names.
#pragma once

// clang-format off
#include <chrono>
#include <utility>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
// clang-format on

namespace pipescale::router {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using HttpRequest = http::request<http::string_body>;
using HttpResponse = http::response<http::string_body>;
// Bytes a connection's read buffer holds from its start. Beast reads at most what the buffer has
// room for (512 bytes at least): left to grow by itself, a 1 MB body arrived in 512-byte reads,
// two thousand system calls and parser steps, half the CPU a 1 MB request cost.
inline constexpr size_t kReadBufferBytes = 64 << 10;
// A read buffer of kReadBufferBytes.
inline beast::flat_buffer ReadBuffer() {
  beast::flat_buffer buffer;
  buffer.reserve(kReadBufferBytes);
  return buffer;
}
// A coroutine's error, instead of an exception: `co_await op(..., Redirect(ec))`.
inline auto Redirect(beast::error_code& ec) {
  return asio::redirect_error(asio::use_awaitable, ec);
}
// Waits `ms` milliseconds on `timer` (none when not positive); a cancelled wait ends early.
inline asio::awaitable<void> SleepMs(asio::steady_timer& timer, double ms) {
  timer.expires_after(std::chrono::duration_cast<asio::steady_timer::duration>(
      std::chrono::duration<double, std::milli>(ms)));
  beast::error_code ec;
  co_await timer.async_wait(Redirect(ec));
}

}  // namespace pipescale::router
