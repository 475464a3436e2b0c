// A watch-backed cache of one resource type: list, then watch from the list's resourceVersion
// with bookmarks; relist when the version has expired (HTTP 410, or an ERROR event with code
// 410 inside a 200 stream); reconnect with exponential backoff after any other failure.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kube/client.h"

namespace pipescale::kube {

// "namespace/name", or "name" for cluster-scoped objects; "" for what is not an object with
// metadata (nothing an apiserver sends, but it must not throw).
std::string ObjectKey(const nlohmann::json& object);

class Informer {
 public:
  struct Options {
    ResourceType type;
    std::string namespace_name;  // empty: all namespaces
    std::string label_selector;
    int watch_timeout_seconds = 300;  // the server ends each watch after this; we rewatch
    std::chrono::milliseconds min_backoff{200};
    std::chrono::milliseconds max_backoff{30000};
    // Resume a watch from this version instead of listing first (as after a restart that
    // kept its cache). Empty: list first.
    std::string resume_from;
    // Names the informer's threads in pipescale_panics_total.
    std::string component = "informer";
    // Indexes by name: each maps an object to the value it is found under in ByIndex ("" for
    // none), so a reader finds its few objects without copying the whole cache.
    std::map<std::string, std::function<std::string(const nlohmann::json&)>> indexes;
  };
  // Called for every object added, changed or deleted (after a relist: every key that differs
  // from the cache), with the object as it now is or, when deleted, as it last was, once the
  // cache holds the change. It runs on the informer's own dispatch thread, in the order of the
  // changes and never inside the HTTP client's callbacks; a throw from it is counted and logged
  // and the next change is delivered. Must not block for long.
  using Handler = std::function<void(const std::string& key, const nlohmann::json& object)>;

  Informer(const Client& client, Options options, Handler handler);
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  void Start();
  // Asks the threads to end without waiting: a watch notices within about a second (curl's
  // progress callback), so an owner of many informers asks them all before it joins any.
  void RequestStop();
  void Stop();  // idempotent; returns once the threads have ended
  // True once the first list (or resumed watch) has filled the cache.
  bool WaitForSync(std::chrono::milliseconds timeout);
  bool Synced() const;

  std::optional<nlohmann::json> Get(const std::string& key) const;
  bool Contains(const std::string& key) const;
  std::vector<nlohmann::json> List() const;
  // The objects `index` (one of Options::indexes) files under `value`, in key order.
  std::vector<nlohmann::json> ByIndex(const std::string& index, const std::string& value) const;

  // Observability for metrics and tests.
  int relists() const { return relists_.load(); }
  int reconnects() const { return reconnects_.load(); }
  std::string resource_version() const;

 private:
  void Loop(bool resume);
  void Dispatch();  // the dispatch thread: hands queued changes to the handler
  void Deliver(std::string key, nlohmann::json object);  // queues a change for Dispatch
  Status ListAndReplace();
  Status WatchOnce();  // kExpired when the server says the version is gone
  void Apply(const WatchEvent& input);
  // The cache's writes, which keep the indexes; mu_ held.
  // An object as cached: its JSON text, a few times smaller than its parsed tree (5000
  // pipelines' trees held most of the operator's memory), and the values it is indexed under.
  struct Entry {
    std::string text;
    std::map<std::string, std::string> indexed;  // index name -> value
  };
  void Put(const std::string& key, const nlohmann::json& object, std::string text);  // its dump
  void Erase(const std::string& key);
  void Unindex(const std::string& key, const Entry& entry);
  static std::vector<nlohmann::json> Parse(const std::vector<std::string>& texts);
  void Backoff(std::chrono::milliseconds& delay);
  // Logs a failed list or watch when its message differs from the last one (a 403 from
  // missing RBAC says so once, not at every retry), and the recovery after one.
  void Report(const char* what, const Status& status);

  const Client& client_;
  Options options_;
  Handler handler_;

  mutable std::mutex mu_;
  std::condition_variable cv_;          // signals sync and stop
  std::condition_variable pending_cv_;  // signals a queued change and stop
  std::deque<std::pair<std::string, nlohmann::json>> pending_;
  std::map<std::string, Entry> cache_;
  // Index name -> value -> keys.
  std::map<std::string, std::map<std::string, std::set<std::string>>> index_;
  std::string resource_version_;
  bool synced_ = false;

  std::atomic<bool> stop_{false};
  std::atomic<int> relists_{0};
  std::atomic<int> reconnects_{0};
  std::string last_error_;  // the informer thread's own
  std::thread thread_;
  std::thread dispatcher_;
};

}  // namespace pipescale::kube
