#include "profile/oip_client.h"

#include <algorithm>

#include "common/strings.h"

namespace pipescale::profile {
namespace {

// An answer larger than this is not one a profile needs (identity models echo their input).
constexpr size_t kMaxAnswerBytes = size_t{256} << 20;

bool IsJsonObject(const std::string& body) {
  const size_t first = body.find_first_not_of(" \t\r\n");
  return first != std::string::npos && body[first] == '{';
}

}  // namespace

OipClient::OipClient(std::string address, std::string model, std::chrono::milliseconds timeout)
    : address_(std::move(address)),
      model_(std::move(model)),
      timeout_(timeout),
      session_(std::make_unique<http::Session>()) {
  base_url_ = address_.find("://") != std::string::npos ? address_ : "http://" + address_;
  while (base_url_.ends_with('/')) base_url_.pop_back();
  model_path_ = "/v2/models/" + http::Escape(model_);
}

OipClient::~OipClient() = default;

Result<OipClient::Answer> OipClient::Send(const std::string& method, const std::string& path,
                                          const std::string& body, double* elapsed_ms) {
  const http::Request request{
      .method = method,
      .url = base_url_ + path,
      .body = method == "POST" ? body : "",
      .headers = {"Content-Type: application/json", "Accept: application/json", "Expect:"}};
  const http::Limits limits{
      .max_body_bytes = kMaxAnswerBytes,
      .timeout = timeout_,
      .connect_timeout = std::min(timeout_, std::chrono::milliseconds(10000))};
  const auto start = std::chrono::steady_clock::now();
  auto answer = session_->Perform(request, limits, method + " " + path);
  const auto end = std::chrono::steady_clock::now();
  if (elapsed_ms != nullptr) {
    *elapsed_ms = std::chrono::duration<double, std::milli>(end - start).count();
  }
  if (!answer) return answer.error();
  if (sent_++ > 0 && session_->new_connections() > 0 && keeps_alive_) {
    keeps_alive_ = false;
    session_->ForbidReuse();
  }
  return std::move(*answer);
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
