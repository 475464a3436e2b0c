#include "http/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

#include "common/guard.h"
#include "common/strings.h"

namespace pipescale::http {
namespace {

// How much of libcurl's own words a message repeats: they may quote the URL.
constexpr size_t kQuotedDetail = 200;

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// What a buffered transfer writes into.
struct Sink {
  std::string body;
  size_t cap = 0;
  bool too_large = false;
};

size_t Append(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t n = size * count;
  if (sink->body.size() + n > sink->cap) {
    sink->too_large = true;
    return 0;  // aborts the transfer
  }
  sink->body.append(data, n);
  return n;
}

// What a stream's callbacks share with libcurl.
struct Flow {
  const StreamCallbacks* callbacks = nullptr;
  CURL* curl = nullptr;
  size_t error_cap = 0;
  StreamEnd end;
};

bool Success(long status) { return status >= 200 && status < 300; }

size_t OnStreamData(char* data, size_t size, size_t count, void* user) {
  auto* flow = static_cast<Flow*>(user);
  const size_t n = size * count;
  if (flow->end.status == 0)
    curl_easy_getinfo(flow->curl, CURLINFO_RESPONSE_CODE, &flow->end.status);
  if (!Success(flow->end.status)) {
    // Only quoted: past its cap the rest is not worth reading.
    const size_t room = flow->error_cap - std::min(flow->error_cap, flow->end.error_body.size());
    flow->end.error_body.append(data, std::min(n, room));
    return n <= room ? n : 0;
  }
  bool more = false;
  try {
    more = flow->callbacks->on_data(std::string_view(data, n));
  } catch (...) {
    flow->end.threw = CurrentExceptionMessage();
    return 0;
  }
  if (!more) {
    flow->end.stopped = true;
    return 0;
  }
  return n;
}

int OnStreamProgress(void* user, curl_off_t /*dltotal*/, curl_off_t /*dlnow*/,
                     curl_off_t /*ultotal*/, curl_off_t /*ulnow*/) {
  auto* flow = static_cast<Flow*>(user);
  if (flow->callbacks->should_stop && flow->callbacks->should_stop()) {
    flow->end.stopped = true;
    return 1;  // aborts the transfer
  }
  return 0;
}

void SetTls(CURL* c, const Tls& tls) {
  if (tls.insecure_skip_verify) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (!tls.ca_pem.empty()) {
    curl_blob ca{const_cast<char*>(tls.ca_pem.data()), tls.ca_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &ca);
  }
  if (!tls.client_cert_pem.empty()) {
    curl_blob cert{const_cast<char*>(tls.client_cert_pem.data()), tls.client_cert_pem.size(),
                   CURL_BLOB_COPY};
    curl_blob key{const_cast<char*>(tls.client_key_pem.data()), tls.client_key_pem.size(),
                  CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
    curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
  }
}

Error TooLarge(const std::string& what, size_t cap) {
  return Error{ErrorKind::kInvalid, what + ": response larger than " + SizeText(cap)};
}

Error Failed(const std::string& what, CURLcode rc, const char* detail) {
  return Error{
      ErrorKind::kTransient,
      what + ": " +
          EscapeUserText(*detail != '\0' ? detail : curl_easy_strerror(rc), kQuotedDetail)};
}

}  // namespace

std::string SizeText(size_t bytes) {
  constexpr size_t kKiB = 1024, kMiB = kKiB * 1024;
  if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  if (bytes >= kKiB && bytes % kKiB == 0) return std::to_string(bytes / kKiB) + " KiB";
  return std::to_string(bytes) + " bytes";
}

std::string Escape(std::string_view text) {
  std::string out;
  constexpr char kHex[] = "0123456789ABCDEF";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

struct Session::Handle {
  CURL* curl = nullptr;
  curl_slist* headers = nullptr;
  char detail[CURL_ERROR_SIZE] = "";

  Handle() = default;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&&) = delete;
  Handle& operator=(Handle&&) = delete;
  ~Handle() {
    curl_slist_free_all(headers);
    if (curl != nullptr) curl_easy_cleanup(curl);
  }
};

Session::Session() : handle_(std::make_unique<Handle>()) {
  GlobalInit();
  handle_->curl = curl_easy_init();
}

Session::~Session() = default;

bool Session::Prepare(const Request& request, const Limits& limits) {
  CURL* c = handle_->curl;
  if (c == nullptr) return false;
  // Options go; the connection, DNS and TLS session caches stay.
  curl_easy_reset(c);
  curl_slist_free_all(handle_->headers);
  handle_->headers = nullptr;
  for (const std::string& h : request.headers) {
    handle_->headers = curl_slist_append(handle_->headers, h.c_str());
  }
  handle_->detail[0] = '\0';
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, handle_->headers);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, handle_->detail);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(limits.timeout.count()));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(limits.connect_timeout.count()));
  if (forbid_reuse_) curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
  if (request.tls != nullptr) SetTls(c, *request.tls);
  if (request.method == "GET" && request.body.empty()) {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else {
    if (request.method != "POST")
      curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    if (!request.body.empty() || request.method == "POST") {
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
    }
  }
  return true;
}

Result<Answer> Session::Perform(const Request& request, const Limits& limits,
                                const std::string& what) {
  if (!Prepare(request, limits))
    return Error{ErrorKind::kTransient, what + ": cannot start libcurl"};
  CURL* c = handle_->curl;
  Sink sink{.body = {}, .cap = limits.max_body_bytes, .too_large = false};
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  // Refuses at once an answer that announces its size; Append catches the others.
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(limits.max_body_bytes));
  const CURLcode rc = curl_easy_perform(c);
  if (rc == CURLE_FILESIZE_EXCEEDED || sink.too_large) return TooLarge(what, limits.max_body_bytes);
  if (rc != CURLE_OK) return Failed(what, rc, handle_->detail);
  Answer answer;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &answer.status);
  const char* type = nullptr;
  curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type);
  if (type != nullptr) answer.content_type = type;
  answer.body = std::move(sink.body);
  return answer;
}

Result<StreamEnd> Session::Stream(const Request& request, const Limits& limits,
                                  const std::string& what, const StreamCallbacks& callbacks) {
  if (!Prepare(request, limits))
    return Error{ErrorKind::kTransient, what + ": cannot start libcurl"};
  CURL* c = handle_->curl;
  Flow flow{.callbacks = &callbacks, .curl = c, .error_cap = limits.max_body_bytes, .end = {}};
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnStreamData);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &flow);
  // The progress callback runs about once a second even when no bytes arrive, so a stop ends
  // an idle stream promptly.
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, OnStreamProgress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &flow);
  const CURLcode rc = curl_easy_perform(c);
  if (flow.end.status == 0) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &flow.end.status);
  // Ended by the caller, by a handler that threw, or by an error body past its cap: all known.
  const bool ended = flow.end.stopped || !flow.end.threw.empty() ||
                     (flow.end.status != 0 && !Success(flow.end.status));
  if (rc != CURLE_OK && !ended) return Failed(what, rc, handle_->detail);
  return std::move(flow.end);
}

long Session::new_connections() const {
  long connects = 0;
  if (handle_->curl != nullptr) curl_easy_getinfo(handle_->curl, CURLINFO_NUM_CONNECTS, &connects);
  return connects;
}

}  // namespace pipescale::http
