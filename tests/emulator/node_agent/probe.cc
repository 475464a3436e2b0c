#include "node_agent/probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace pipescale::emulator {
namespace {

using nlohmann::json;

// A connected TCP socket, or -1 when the connection fails within `timeout`.
int Connect(const std::string& ip, int port, std::chrono::milliseconds timeout) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
    close(fd);
    return -1;
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  int err = 0;
  socklen_t len = sizeof err;
  if (poll(&p, 1, static_cast<int>(timeout.count())) != 1 ||
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// The status code of GET path, or 0.
int HttpGet(const std::string& ip, int port, const std::string& path,
            std::chrono::milliseconds timeout) {
  const int fd = Connect(ip, port, timeout);
  if (fd < 0) return 0;
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + ip + ":" +
                              std::to_string(port) +
                              "\r\nUser-Agent: kube-probe/1.20\r\nConnection: close\r\n\r\n";
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    return 0;
  }
  char buffer[64] = {};
  size_t got = 0;
  pollfd p{fd, POLLIN, 0};
  while (got < 12 && poll(&p, 1, static_cast<int>(timeout.count())) == 1) {
    const ssize_t n = recv(fd, buffer + got, sizeof buffer - 1 - got, 0);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  // "HTTP/1.1 200 ..."
  if (got < 12 || std::strncmp(buffer, "HTTP/1.", 7) != 0) return 0;
  return std::atoi(buffer + 9);
}

}  // namespace

int ResolvePort(const json& port, const json& container) {
  if (port.is_number_integer()) return port.get<int>();
  if (!port.is_string()) return 0;
  for (const json& p : container.value("ports", json::array())) {
    if (p.value("name", "") == port.get<std::string>()) return p.value("containerPort", 0);
  }
  const std::string s = port.get<std::string>();
  return s.find_first_not_of("0123456789") == std::string::npos && !s.empty() ? std::stoi(s) : 0;
}

bool RunProbe(const json& probe, const json& container, const std::string& pod_ip,
              std::chrono::milliseconds timeout) {
  if (probe.contains("httpGet")) {
    const json& get = probe["httpGet"];
    const int port = ResolvePort(get.value("port", json()), container);
    const int code = HttpGet(pod_ip, port, get.value("path", "/"), timeout);
    return code >= 200 && code < 400;
  }
  if (probe.contains("tcpSocket")) {
    const int fd =
        Connect(pod_ip, ResolvePort(probe["tcpSocket"].value("port", json()), container), timeout);
    if (fd >= 0) close(fd);
    return fd >= 0;
  }
  return false;
}

}  // namespace pipescale::emulator
