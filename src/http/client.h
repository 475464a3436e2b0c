// HTTP over libcurl for every client of ours: what is buffered is capped, every transfer has its
// timeouts, and a failure is an error value whose message starts with what the caller was doing.
// An answer past its cap is refused (kInvalid), never read whole: a proxy's page, a query that
// selects too much or a hostile server cannot make a process allocate without bound.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace pipescale::http {

struct Limits {
  // The largest body buffered: a larger answer is kInvalid. For a stream, the largest error body
  // kept (the rest is dropped: it is only quoted).
  size_t max_body_bytes = size_t{16} << 20;
  std::chrono::milliseconds timeout{30000};  // the whole transfer; 0: none (a stream)
  std::chrono::milliseconds connect_timeout{10000};
};

// Whom to trust and who we are; empty PEMs mean the system's trust store and no client
// certificate.
struct Tls {
  bool insecure_skip_verify = false;
  std::string ca_pem;
  std::string client_cert_pem;
  std::string client_key_pem;
};

struct Request {
  std::string method = "GET";
  std::string url;
  std::string body;                  // sent when not empty, and always with POST
  std::vector<std::string> headers;  // "Name: value"
  const Tls* tls = nullptr;
};

struct Answer {
  long status = 0;
  std::string content_type;
  std::string body;
};

// How a stream ended when its transfer did not fail.
struct StreamEnd {
  long status = 0;
  std::string error_body;  // a non-2xx answer's body, cut at Limits::max_body_bytes
  bool stopped = false;    // the caller ended it (on_data returned false, or should_stop)
  std::string threw;       // what on_data threw, which must not unwind through libcurl
};

struct StreamCallbacks {
  // Each piece of a 2xx answer's body as it arrives; false ends the transfer.
  std::function<bool(std::string_view)> on_data;
  // Asked about once a second, also while nothing arrives; true ends the transfer.
  std::function<bool()> should_stop;
};

// "16 MiB", "128 KiB", "1000 bytes": a cap as messages say it.
std::string SizeText(size_t bytes);

// Percent-encoding of a URL component or form value.
std::string Escape(std::string_view text);

// One libcurl handle, reused by consecutive requests so that they keep their connection alive, as
// a steady client does. Not thread-safe: one per thread, or one per request.
class Session {
 public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Every HTTP status is an Answer. Errors, each "<what>: ...": kInvalid for a body past
  // limits.max_body_bytes ("<what>: response larger than 16 MiB"), kTransient for a transfer
  // that failed (refused, reset, timed out, cut).
  Result<Answer> Perform(const Request& request, const Limits& limits, const std::string& what);

  // The body of a 2xx answer handed to `callbacks.on_data` as it arrives, nothing of it kept
  // (a watch); a non-2xx answer's body kept, cut at limits.max_body_bytes. kTransient for a
  // transfer that failed before the caller ended it.
  Result<StreamEnd> Stream(const Request& request, const Limits& limits, const std::string& what,
                           const StreamCallbacks& callbacks);

  // Connections the last transfer opened: 0 when it reused one.
  long new_connections() const;
  // From now on each request opens its own connection (for a server that closes them).
  void ForbidReuse() { forbid_reuse_ = true; }

 private:
  struct Handle;
  // Options of `request` set on a freshly reset handle; false when the handle is unusable.
  bool Prepare(const Request& request, const Limits& limits);

  std::unique_ptr<Handle> handle_;
  bool forbid_reuse_ = false;
};

}  // namespace pipescale::http
