#include "kube/client.h"

#include <curl/curl.h>

#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#include "common/guard.h"
#include "common/json_fields.h"

namespace pipescale::kube {
namespace {

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;
using Headers = std::unique_ptr<curl_slist, SlistDeleter>;

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string Token(const ClusterConfig& config) {
  if (config.token_file.empty()) return config.token;
  std::ifstream in(config.token_file);
  std::string token;
  std::getline(in, token);
  return token.empty() ? config.token : token;
}

// A handle set up for one request against the cluster: URL, TLS, authentication.
CurlHandle Prepare(const ClusterConfig& config, const std::string& path, Headers& headers,
                   const std::string& content_type) {
  GlobalInit();
  CurlHandle curl(curl_easy_init());
  CURL* c = curl.get();
  const std::string url = config.server + path;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
  if (config.insecure_skip_tls_verify) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (!config.ca_pem.empty()) {
    curl_blob ca{const_cast<char*>(config.ca_pem.data()), config.ca_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &ca);
  }
  if (!config.client_cert_pem.empty()) {
    curl_blob cert{const_cast<char*>(config.client_cert_pem.data()), config.client_cert_pem.size(),
                   CURL_BLOB_COPY};
    curl_blob key{const_cast<char*>(config.client_key_pem.data()), config.client_key_pem.size(),
                  CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
    curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
  }
  curl_slist* list = nullptr;
  list = curl_slist_append(list, "Accept: application/json");
  if (!content_type.empty())
    list = curl_slist_append(list, ("Content-Type: " + content_type).c_str());
  if (const std::string token = Token(config); !token.empty()) {
    list = curl_slist_append(list, ("Authorization: Bearer " + token).c_str());
  }
  headers.reset(list);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  return curl;
}

size_t AppendBody(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
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

// The server's own words from a Status object, when the body is one.
std::string ServerMessage(const std::string& body) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    return j["message"].get<std::string>();
  }
  return body.substr(0, 200);
}

Result<nlohmann::json> Call(const ClusterConfig& config, std::chrono::seconds timeout,
                            const char* method, const std::string& path, const std::string& body,
                            const std::string& content_type) {
  Headers headers;
  CurlHandle curl = Prepare(config, path, headers, body.empty() ? "" : content_type);
  CURL* c = curl.get();
  std::string response;
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, static_cast<long>(timeout.count()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &response);
  if (!body.empty()) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  const std::string what = std::string(method) + " " + path;
  if (const CURLcode rc = curl_easy_perform(c); rc != CURLE_OK) {
    return Error{ErrorKind::kTransient, what + ": " + curl_easy_strerror(rc)};
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status >= 300) {
    return Error{KindForStatus(status),
                 what + ": HTTP " + std::to_string(status) + ": " + ServerMessage(response)};
  }
  auto parsed = nlohmann::json::parse(response, nullptr, false);
  if (parsed.is_discarded()) {
    return Error{ErrorKind::kTransient, what + ": the response is not JSON"};
  }
  return parsed;
}

// State of one watch stream, shared with libcurl's callbacks.
struct Stream {
  const std::function<bool(const WatchEvent&)>* on_event;
  const std::atomic<bool>* stop;
  std::string pending;  // bytes of an event not yet terminated by '\n'
  std::string error_body;
  std::string handler_threw;  // what on_event threw: it must not unwind through libcurl
  long status = 0;
  bool stopped = false;
  CURL* curl = nullptr;
};

size_t OnWatchData(char* data, size_t size, size_t count, void* user) {
  auto* s = static_cast<Stream*>(user);
  const size_t n = size * count;
  if (s->status == 0) curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
  if (s->status != 200) {
    s->error_body.append(data, n);
    return n;
  }
  s->pending.append(data, n);
  size_t start = 0;
  for (size_t nl = 0; (nl = s->pending.find('\n', start)) != std::string::npos; start = nl + 1) {
    const std::string_view line(s->pending.data() + start, nl - start);
    if (line.empty()) continue;
    auto event = nlohmann::json::parse(line, nullptr, false);
    if (!event.is_object()) continue;  // a torn line cannot happen on '\n' boundaries
    WatchEvent e{StringField(event, "type"), std::move(event["object"])};
    bool more = false;
    try {
      more = !s->stop->load() && (*s->on_event)(e);
    } catch (...) {
      s->handler_threw = CurrentExceptionMessage();
      return 0;
    }
    if (!more) {
      s->stopped = true;
      return 0;  // aborts the transfer
    }
  }
  s->pending.erase(0, start);
  return n;
}

int OnWatchProgress(void* user, curl_off_t /*dltotal*/, curl_off_t /*dlnow*/,
                    curl_off_t /*ultotal*/, curl_off_t /*ulnow*/) {
  auto* s = static_cast<Stream*>(user);
  if (s->stop->load()) {
    s->stopped = true;
    return 1;
  }
  return 0;
}

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

Client::Client(ClusterConfig config) : config_(std::move(config)) {}

Result<nlohmann::json> Client::Send(const char* method, const std::string& path,
                                    const std::string& body,
                                    const std::string& content_type) const {
  requests_->fetch_add(1, std::memory_order_relaxed);
  return Call(config_, timeout_, method, path, body, content_type);
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
  Headers headers;
  CurlHandle curl = Prepare(config_, path, headers, "");
  CURL* c = curl.get();
  Stream stream{.on_event = &on_event, .stop = &stop, .curl = c};
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnWatchData);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &stream);
  // The progress callback runs about once a second even when no bytes arrive, so a stop
  // request ends an idle watch promptly.
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, OnWatchProgress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &stream);
  const CURLcode rc = curl_easy_perform(c);
  if (stream.stopped) return Done{};
  const std::string what = "watch " + path;
  if (!stream.handler_threw.empty()) {
    ReportPanic("kube-watch", stream.handler_threw);
    return Error{ErrorKind::kTransient,
                 what + ": the event handler threw: " + stream.handler_threw};
  }
  if (rc != CURLE_OK) return Error{ErrorKind::kTransient, what + ": " + curl_easy_strerror(rc)};
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) {
    return Error{KindForStatus(status), what + ": HTTP " + std::to_string(status) + ": " +
                                            ServerMessage(stream.error_body)};
  }
  return Done{};
}

}  // namespace pipescale::kube
