#include "kube/client.h"

#include <fstream>

#include "common/guard.h"
#include "common/json_fields.h"
#include "common/strings.h"
#include "http/client.h"

namespace pipescale::kube {
namespace {

// How much of an error answer is kept and quoted: a Status object is a few hundred bytes, and a
// proxy's page is recognised by its start.
constexpr size_t kMaxErrorBody = size_t{64} << 10;
constexpr size_t kQuotedBody = 200;

std::string Token(const ClusterConfig& config) {
  if (config.token_file.empty()) return config.token;
  std::ifstream in(config.token_file);
  std::string token;
  std::getline(in, token);
  return token.empty() ? config.token : token;
}

http::Tls TlsOf(const ClusterConfig& config) {
  return {.insecure_skip_verify = config.insecure_skip_tls_verify,
          .ca_pem = config.ca_pem,
          .client_cert_pem = config.client_cert_pem,
          .client_key_pem = config.client_key_pem};
}

// A request against the cluster: URL, authentication, content type.
http::Request RequestFor(const ClusterConfig& config, const http::Tls& tls, const char* method,
                         const std::string& path, std::string body,
                         const std::string& content_type) {
  http::Request request{.method = method, .url = config.server + path, .body = std::move(body)};
  request.headers.emplace_back("Accept: application/json");
  if (!request.body.empty()) request.headers.push_back("Content-Type: " + content_type);
  if (const std::string token = Token(config); !token.empty()) {
    request.headers.push_back("Authorization: Bearer " + token);
  }
  request.tls = &tls;
  return request;
}

ErrorKind KindForStatus(long status) {
  switch (status) {
    case 404:
      return ErrorKind::kNotFound;
    case 409:
      return ErrorKind::kConflict;
    case 410:
      return ErrorKind::kExpired;
    case 429:
      return ErrorKind::kTransient;
    default:
      return status >= 500 ? ErrorKind::kTransient : ErrorKind::kInvalid;
  }
}

// The server's own words from a Status object, when the body is one; else the start of the
// body, escaped. It goes into status conditions and events, which must be valid UTF-8: a parsed
// JSON string already is, and is kept verbatim (its quotes unescaped, as users grep for them),
// only cut at a character boundary.
std::string ServerMessage(const std::string& body) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    std::string message = j["message"].get<std::string>();
    size_t cut = kQuotedBody * 4;
    if (message.size() <= cut) return message;
    while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0U) == 0x80U) --cut;
    return message.substr(0, cut) + "…";
  }
  return EscapeUserText(body, kQuotedBody);
}

Result<nlohmann::json> Call(const ClusterConfig& config, const ClientLimits& limits,
                            const char* method, const std::string& path, std::string body,
                            const std::string& content_type) {
  const http::Tls tls = TlsOf(config);
  const std::string what = std::string(method) + " " + path;
  http::Session session;
  auto answer =
      session.Perform(RequestFor(config, tls, method, path, std::move(body), content_type),
                      {.max_body_bytes = limits.max_answer_bytes, .timeout = limits.timeout}, what);
  if (!answer) return answer.error();
  if (answer->status < 200 || answer->status >= 300) {
    return Error{KindForStatus(answer->status), what + ": HTTP " + std::to_string(answer->status) +
                                                    ": " + ServerMessage(answer->body)};
  }
  auto parsed = nlohmann::json::parse(answer->body, nullptr, false);
  if (parsed.is_discarded()) {
    return Error{ErrorKind::kTransient, what + ": the response is not JSON"};
  }
  return parsed;
}

// The events of one watch stream, one JSON object a line, each held to `max_event_bytes`.
class EventLines {
 public:
  EventLines(const std::function<bool(const WatchEvent&)>& on_event, const std::atomic<bool>& stop,
             size_t max_event_bytes)
      : on_event_(on_event), stop_(stop), max_event_bytes_(max_event_bytes) {}

  // Takes the next piece of the stream; false ends it (the handler said so, or an event is
  // past its cap).
  bool Add(std::string_view data) {
    pending_.append(data);
    size_t start = 0;
    for (size_t nl = 0; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (nl - start > max_event_bytes_) return TooLarge();
      if (!Deliver(std::string_view(pending_.data() + start, nl - start))) return false;
    }
    pending_.erase(0, start);
    // An event still arriving: what it holds so far already tells whether it is too large.
    return pending_.size() <= max_event_bytes_ || TooLarge();
  }

  bool too_large() const { return too_large_; }

 private:
  bool Deliver(std::string_view line) {
    if (line.empty()) return true;
    auto event = nlohmann::json::parse(line, nullptr, false);
    if (!event.is_object()) return true;  // a torn line cannot happen on '\n' boundaries
    WatchEvent e{StringField(event, "type"), std::move(event["object"])};
    return !stop_.load() && on_event_(e);
  }

  bool TooLarge() {
    too_large_ = true;
    return false;
  }

  const std::function<bool(const WatchEvent&)>& on_event_;
  const std::atomic<bool>& stop_;
  size_t max_event_bytes_;
  std::string pending_;  // bytes of an event not yet terminated by '\n'
  bool too_large_ = false;
};

}  // namespace

std::string CollectionPath(const ResourceType& type, const std::string& ns) {
  std::string path = type.api_version.find('/') == std::string::npos ? "/api/" + type.api_version
                                                                     : "/apis/" + type.api_version;
  if (type.namespaced && !ns.empty()) path += "/namespaces/" + ns;
  return path + "/" + type.plural;
}

std::string ObjectPath(const ResourceType& type, const std::string& ns, const std::string& name,
                       const std::string& subresource) {
  std::string path = CollectionPath(type, ns) + "/" + name;
  if (!subresource.empty()) path += "/" + subresource;
  return path;
}

std::string QueryEscape(const std::string& value) {
  std::string out;
  constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Client::Client(ClusterConfig config, ClientLimits limits)
    : config_(std::move(config)), limits_(limits) {}

Result<nlohmann::json> Client::Send(const char* method, const std::string& path,
                                    const std::string& body,
                                    const std::string& content_type) const {
  requests_->fetch_add(1, std::memory_order_relaxed);
  return Call(config_, limits_, method, path, body, content_type);
}

Result<nlohmann::json> Client::Get(const std::string& path) const {
  return Send("GET", path, "", "");
}

Result<nlohmann::json> Client::Create(const std::string& collection_path,
                                      const nlohmann::json& object) const {
  return Send("POST", collection_path, object.dump(), "application/json");
}

Result<nlohmann::json> Client::Update(const std::string& path, const nlohmann::json& object) const {
  return Send("PUT", path, object.dump(), "application/json");
}

Result<nlohmann::json> Client::MergePatch(const std::string& path,
                                          const nlohmann::json& patch) const {
  return Send("PATCH", path, patch.dump(), "application/merge-patch+json");
}

Result<nlohmann::json> Client::StrategicMergePatch(const std::string& path,
                                                   const nlohmann::json& patch) const {
  return Send("PATCH", path, patch.dump(), "application/strategic-merge-patch+json");
}

Status Client::Delete(const std::string& path) const {
  auto r = Send("DELETE", path, "", "");
  if (!r) return r.error();
  return Done{};
}

Status Client::Watch(const std::string& path,
                     const std::function<bool(const WatchEvent&)>& on_event,
                     const std::atomic<bool>& stop) const {
  requests_->fetch_add(1, std::memory_order_relaxed);
  const http::Tls tls = TlsOf(config_);
  const std::string what = "watch " + path;
  EventLines lines(on_event, stop, limits_.max_event_bytes);
  const http::StreamCallbacks callbacks{
      .on_data = [&](std::string_view data) { return lines.Add(data); },
      .should_stop = [&] { return stop.load(); }};
  http::Session session;
  // No timeout of our own: the server ends a watch after its timeoutSeconds.
  auto end = session.Stream(RequestFor(config_, tls, "GET", path, "", ""),
                            {.max_body_bytes = kMaxErrorBody, .timeout = {}}, what, callbacks);
  if (!end) return end.error();
  if (!end->threw.empty()) {
    ReportPanic("kube-watch", end->threw);
    return Error{ErrorKind::kTransient, what + ": the event handler threw: " + end->threw};
  }
  if (lines.too_large()) {
    return Error{ErrorKind::kInvalid,
                 what + ": an event larger than " + http::SizeText(limits_.max_event_bytes)};
  }
  if (end->stopped) return Done{};
  if (end->status != 200) {
    return Error{KindForStatus(end->status), what + ": HTTP " + std::to_string(end->status) + ": " +
                                                 ServerMessage(end->error_body)};
  }
  return Done{};
}

}  // namespace pipescale::kube
