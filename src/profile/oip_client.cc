#include "profile/oip_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>

#include "common/strings.h"

namespace pipescale::profile {
namespace {

// An answer larger than this is not one a profile needs (identity models echo their input).
constexpr size_t kMaxAnswerBytes = size_t{256} << 20;

struct Body {
  std::string text;
  bool too_large = false;
};

size_t Append(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<Body*>(user);
  if (body->text.size() + size * count > kMaxAnswerBytes) {
    body->too_large = true;
    return 0;
  }
  body->text.append(data, size * count);
  return size * count;
}

std::string Escape(CURL* curl, const std::string& s) {
  char* e = curl_easy_escape(curl, s.c_str(), static_cast<int>(s.size()));
  std::string out = e != nullptr ? e : s;
  curl_free(e);
  return out;
}

bool IsJsonObject(const std::string& body) {
  const size_t first = body.find_first_not_of(" \t\r\n");
  return first != std::string::npos && body[first] == '{';
}

}  // namespace

struct OipClient::Answer {
  long status = 0;
  std::string content_type;
  std::string body;
};

struct OipClient::Handle {
  CURL* curl = nullptr;
  curl_slist* headers = nullptr;
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

OipClient::OipClient(std::string address, std::string model, std::chrono::milliseconds timeout)
    : address_(std::move(address)),
      model_(std::move(model)),
      timeout_(timeout),
      handle_(std::make_unique<Handle>()) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  base_url_ = address_.find("://") != std::string::npos ? address_ : "http://" + address_;
  while (base_url_.ends_with('/')) base_url_.pop_back();
  handle_->curl = curl_easy_init();
  CURL* c = handle_->curl;
  if (c == nullptr) return;
  for (const char* h : {"Content-Type: application/json", "Accept: application/json", "Expect:"}) {
    handle_->headers = curl_slist_append(handle_->headers, h);
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, handle_->headers);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_.count()));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::min<int64_t>(timeout_.count(), 10000)));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Append);
  model_path_ = "/v2/models/" + Escape(c, model_);
}

OipClient::~OipClient() = default;

Result<OipClient::Answer> OipClient::Send(const std::string& method, const std::string& path,
                                          const std::string& body, double* elapsed_ms) {
  CURL* c = handle_->curl;
  if (c == nullptr) return Error{ErrorKind::kTransient, "cannot start libcurl"};
  Body received;
  char detail[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(c, CURLOPT_URL, (base_url_ + path).c_str());
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &received);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
  if (method == "POST") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  } else {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  }
  const auto start = std::chrono::steady_clock::now();
  const CURLcode rc = curl_easy_perform(c);
  const auto end = std::chrono::steady_clock::now();
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, static_cast<char*>(nullptr));
  if (elapsed_ms != nullptr) {
    *elapsed_ms = std::chrono::duration<double, std::milli>(end - start).count();
  }
  if (received.too_large) {
    return Error{ErrorKind::kInvalid, method + " " + path + ": the answer is larger than " +
                                          std::to_string(kMaxAnswerBytes >> 20) + " MiB"};
  }
  if (rc != CURLE_OK) {
    return Error{ErrorKind::kTransient,
                 method + " " + path + ": " + (*detail != '\0' ? detail : curl_easy_strerror(rc))};
  }
  long connects = 0;
  curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &connects);
  if (sent_++ > 0 && connects > 0 && keeps_alive_) {
    keeps_alive_ = false;
    curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
  }
  Answer answer;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &answer.status);
  const char* type = nullptr;
  curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type);
  if (type != nullptr) answer.content_type = type;
  answer.body = std::move(received.text);
  return answer;
}

Error OipClient::NotOip(const std::string& what, const Answer& answer) const {
  std::string type = answer.content_type.empty() ? "" : " (" + answer.content_type + ")";
  return Error{ErrorKind::kInvalid,
               address_ + " does not speak the Open Inference Protocol: " + what + " answered " +
                   std::to_string(answer.status) + type + ": " + Excerpt(answer.body)};
}

Result<InferTiming> OipClient::Infer(const std::string& body) {
  const std::string path = model_path_ + "/infer";
  InferTiming out;
  auto answer = Send("POST", path, body, &out.round_trip_ms);
  if (!answer) return answer.error();
  if (answer->status != 200) {
    return Error{ErrorKind::kUnavailable, "POST " + path + " answered " +
                                              std::to_string(answer->status) + ": " +
                                              Excerpt(answer->body)};
  }
  auto parsed = ParseInferAnswer(answer->body);
  if (!parsed) {
    return Error{ErrorKind::kInvalid,
                 "POST " + path + " answered 200, but " + parsed.error().message};
  }
  out.answer = *parsed;
  return out;
}

Result<std::vector<InputTensor>> OipClient::Handshake(const std::vector<int64_t>& row_shape) {
  const std::string ready_path = "/v2/health/ready";
  auto ready = Send("GET", ready_path, "", nullptr);
  if (!ready) {
    return Error{ErrorKind::kTransient, "nothing answers at " + address_ + " (" +
                                            ready.error().message +
                                            "); is a model server listening there?"};
  }
  if (ready->status != 200) {
    if ((ready->status == 400 || ready->status == 503) && IsJsonObject(ready->body)) {
      return Error{ErrorKind::kUnavailable, address_ + " is not ready: GET " + ready_path +
                                                " answered " + std::to_string(ready->status) +
                                                ": " + Excerpt(ready->body)};
    }
    return NotOip("GET " + ready_path, *ready);
  }
  auto metadata = Send("GET", model_path_, "", nullptr);
  if (!metadata) return Error{ErrorKind::kTransient, address_ + ": " + metadata.error().message};
  if (metadata->status == 404 && IsJsonObject(metadata->body)) {
    return Error{ErrorKind::kNotFound, address_ + " does not serve the model " +
                                           QuoteUserText(model_) + " (GET " + model_path_ +
                                           " answered 404: " + Excerpt(metadata->body) +
                                           "); name the server's model with --model"};
  }
  if (metadata->status != 200) return NotOip("GET " + model_path_, *metadata);
  auto inputs = InputsFromMetadata(metadata->body, row_shape);
  if (!inputs) return NotOip("GET " + model_path_, *metadata);
  // One inference of one row: that the server infers at all is part of the protocol.
  auto probe = Infer(InferBody(*inputs, 1));
  if (!probe) {
    const ErrorKind kind = probe.error().kind;
    const std::string why = kind == ErrorKind::kInvalid
                                ? " does not speak the Open Inference Protocol: "
                                : " failed an inference of one row: ";
    return Error{kind, address_ + why + probe.error().message};
  }
  return inputs;
}

}  // namespace pipescale::profile
