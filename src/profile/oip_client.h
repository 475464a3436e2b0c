// A client of one model server over the Open Inference Protocol (KServe v2 REST), on one
// libcurl handle that keeps its connection alive between requests, as a steady client does.
// Errors name the address and the request that failed.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "http/client.h"
#include "profile/protocol.h"

namespace pipescale::profile {

struct InferTiming {
  double round_trip_ms = 0;  // the client's: from sending the request to the whole answer
  InferAnswer answer;
};

class OipClient {
 public:
  // `address`: HOST:PORT or an http:// URL. `timeout`: for each request.
  OipClient(std::string address, std::string model, std::chrono::milliseconds timeout);
  ~OipClient();
  OipClient(const OipClient&) = delete;
  OipClient& operator=(const OipClient&) = delete;

  // That the server speaks the protocol and serves the model: GET /v2/health/ready (200), GET
  // /v2/models/{model} (its inputs, InputsFromMetadata with `row_shape`), and one inference
  // of a single row that must answer with outputs. kTransient when nothing answers (nothing
  // listening, a timeout), kNotFound for a model the server does not serve, kUnavailable when
  // it is not ready, kInvalid when what answers is not an OIP server.
  Result<std::vector<InputTensor>> Handshake(const std::vector<int64_t>& row_shape);

  // POST /v2/models/{model}/infer with `body`. kTransient for a failed transfer (reset,
  // timeout), kUnavailable for an error status, kInvalid for an answer without outputs.
  Result<InferTiming> Infer(const std::string& body);

  // False once the server has closed its connection after an answer (as a server without
  // keep-alive does): from then on each request opens its own, rather than trying the closed one
  // first.
  bool keeps_alive() const { return keeps_alive_; }
  const std::string& address() const { return address_; }
  const std::string& model() const { return model_; }

 private:
  using Answer = http::Answer;
  Result<Answer> Send(const std::string& method, const std::string& path, const std::string& body,
                      double* elapsed_ms);
  Error NotOip(const std::string& what, const Answer& answer) const;

  std::string address_;
  std::string base_url_;
  std::string model_;
  std::string model_path_;  // /v2/models/{model}, escaped
  std::chrono::milliseconds timeout_;
  std::unique_ptr<http::Session> session_;
  bool keeps_alive_ = true;
  int sent_ = 0;
};

}  // namespace pipescale::profile
