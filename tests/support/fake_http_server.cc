#include "support/fake_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace pipescale::testing {

FakeHttpServer::FakeHttpServer(Handler handler) : handler_(std::move(handler)) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(listen_fd_, 64) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return;  // ok() is false
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { Serve(); });
}

FakeHttpServer::~FakeHttpServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
}

void FakeHttpServer::SetHandler(Handler handler) {
  std::lock_guard lock(mu_);
  handler_ = std::move(handler);
}

FakeHttpServer::Request FakeHttpServer::last_request() {
  std::lock_guard lock(mu_);
  return last_request_;
}

// One connection at a time: the tests send a few requests, and a serial server keeps the
// order of answers the order of requests.
void FakeHttpServer::Serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;  // wakes up to notice stop_
    const int fd = accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    Answer(fd);
    close(fd);
  }
}

namespace {

std::string Header(const std::string& head, const char* name) {
  for (size_t at = head.find("\r\n"); at != std::string::npos; at = head.find("\r\n", at + 2)) {
    const size_t start = at + 2, colon = head.find(':', start);
    const size_t n = std::char_traits<char>::length(name);
    if (colon == start + n && strncasecmp(head.c_str() + start, name, n) == 0) {
      const size_t end = head.find("\r\n", colon);
      return head.substr(colon + 1, end - colon - 1);
    }
  }
  return "";
}

}  // namespace

void FakeHttpServer::Answer(int fd) {
  timeval timeout{2, 0};  // a client that stops sending must not stall the server
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string data;
  char buf[8192];
  size_t head_end = std::string::npos;
  while ((head_end = data.find("\r\n\r\n")) == std::string::npos) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return;
    data.append(buf, n);
  }
  const std::string head = data.substr(0, head_end);
  const size_t length = std::strtoul(Header(head, "Content-Length").c_str(), nullptr, 10);
  if (Header(head, "Expect").find("100-continue") != std::string::npos) {
    const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
    send(fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL);
  }
  while (data.size() < head_end + 4 + length) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return;
    data.append(buf, n);
  }
  Request request;
  const size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
  request.method = head.substr(0, sp1);
  request.target = head.substr(sp1 + 1, sp2 - sp1 - 1);
  request.body = data.substr(head_end + 4, length);
  Handler handler;
  {
    std::lock_guard lock(mu_);
    handler = handler_;
    last_request_ = request;
  }
  ++requests_;
  const std::string response = handler(request);
  for (size_t sent = 0; sent < response.size();) {
    const ssize_t n = send(fd, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += n;
  }
  shutdown(fd, SHUT_WR);
}

std::string HttpResponse(int status, std::string_view content_type, std::string_view body) {
  return "HTTP/1.1 " + std::to_string(status) +
         " Fake\r\nContent-Type: " + std::string(content_type) +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         std::string(body);
}

std::string FormValue(const std::string& body, const std::string& name) {
  size_t at = 0;
  while (at <= body.size()) {
    const size_t end = std::min(body.find('&', at), body.size());
    if (body.compare(at, name.size() + 1, name + "=") == 0) {
      std::string out;
      for (size_t i = at + name.size() + 1; i < end; ++i) {
        if (body[i] == '+') {
          out += ' ';
        } else if (body[i] == '%' && i + 2 < end) {
          out += static_cast<char>(std::strtol(body.substr(i + 1, 2).c_str(), nullptr, 16));
          i += 2;
        } else {
          out += body[i];
        }
      }
      return out;
    }
    at = end + 1;
  }
  return "";
}

}  // namespace pipescale::testing
