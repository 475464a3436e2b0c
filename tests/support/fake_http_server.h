// A fake HTTP server on 127.0.0.1 that answers each request with raw bytes the test chooses.
// Raw, so that a test can send what no well-behaved server would (a cut body, a wrong
// Content-Length, HTML where JSON belongs), which an HTTP library would not let it write.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace pipescale::testing {

class FakeHttpServer {
 public:
  struct Request {
    std::string method;
    std::string target;  // the path and query string
    std::string body;
  };
  // Returns the bytes to send: status line, headers and body. The connection closes after.
  using Handler = std::function<std::string(const Request&)>;

  explicit FakeHttpServer(Handler handler);
  ~FakeHttpServer();
  FakeHttpServer(const FakeHttpServer&) = delete;
  FakeHttpServer& operator=(const FakeHttpServer&) = delete;

  bool ok() const { return port_ != 0; }  // listening
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void SetHandler(Handler handler);
  int requests() const { return requests_; }
  Request last_request();

 private:
  void Serve();
  void Answer(int fd);

  int listen_fd_ = -1;
  int port_ = 0;
  std::mutex mu_;
  Handler handler_;
  Request last_request_;
  std::atomic<int> requests_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A complete HTTP/1.1 response with a correct Content-Length.
std::string HttpResponse(int status, std::string_view content_type, std::string_view body);

// A form field of an x-www-form-urlencoded body, decoded; "" when absent.
std::string FormValue(const std::string& body, const std::string& name);

}  // namespace pipescale::testing
