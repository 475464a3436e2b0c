// A watch-backed cache of one resource type: list, then watch from the list's resourceVersion
// with bookmarks; relist when the version has expired (HTTP 410, or an ERROR event with code
// 410 inside a 200 stream); reconnect with exponential backoff after any other failure.
//
// Each object is decoded once, when a version of it arrives, into an immutable value that every
// reader shares (client-go's transform): a read copies a pointer and parses nothing. What the
// value is belongs to the caller, who knows the objects (this module knows no pipelines): a
// TypedInformer<T> keeps the T its decoder makes, a typed view of only what its readers need
// and smaller than the object's text; an Informer keeps the JSON itself.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kube/client.h"

namespace pipescale::kube {

// "namespace/name", or "name" for cluster-scoped objects; "" for what is not an object with
// metadata (nothing an apiserver sends, but it must not throw).
std::string ObjectKey(const nlohmann::json& object);

struct InformerOptions {
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
  // Indexes by name: each maps an object, as it arrives, to the value it is found under in
  // ByIndex ("" for none), so a reader finds its few objects without copying the whole cache.
  std::map<std::string, std::function<std::string(const nlohmann::json&)>> indexes;
};

// The watch and the cache, whatever the cache keeps of each object; TypedInformer and Informer
// below say what that is.
class InformerBase {
 public:
  using Options = InformerOptions;

  InformerBase(const InformerBase&) = delete;
  InformerBase& operator=(const InformerBase&) = delete;

  void Start();
  // Asks the threads to end without waiting: a watch notices within about a second (curl's
  // progress callback), so an owner of many informers asks them all before it joins any.
  void RequestStop();
  void Stop();  // idempotent; returns once the threads have ended
  // True once the first list (or resumed watch) has filled the cache.
  bool WaitForSync(std::chrono::milliseconds timeout);
  bool Synced() const;
  bool Contains(const std::string& key) const;

  // Observability for metrics and tests.
  int relists() const { return relists_.load(); }
  int reconnects() const { return reconnects_.load(); }
  // Objects decoded so far: one per version that arrived, none per read.
  long decodes() const { return decodes_.load(); }
  std::string resource_version() const;

 protected:
  // What the cache keeps of one object, shared with every reader; immutable.
  using Value = std::shared_ptr<const void>;
  // Must not throw (a throw is counted as a panic and the object left out of the cache).
  using Decode = std::function<Value(const nlohmann::json& object)>;
  // Called for every object added, changed or deleted (after a relist: every key whose version
  // differs from the cache's), with its value as it now is or, when deleted, as it last was,
  // once the cache holds the change. It runs on the informer's own dispatch thread, in the
  // order of the changes and never inside the HTTP client's callbacks; a throw from it is
  // counted and logged and the next change is delivered. Must not block for long.
  using Deliver = std::function<void(const std::string& key, const Value& value)>;

  InformerBase(const Client& client, Options options, Decode decode, Deliver deliver);
  ~InformerBase();

  Value Find(const std::string& key) const;  // nullptr when absent
  std::vector<Value> All() const;            // in key order
  // The objects `index` (one of Options::indexes) files under `value`, in key order.
  std::vector<Value> Indexed(const std::string& index, const std::string& value) const;

 private:
  // An object as cached: its value, the version it was decoded from (a relist decodes again
  // only what changed) and the values it is indexed under.
  struct Entry {
    Value value;
    std::string resource_version;
    std::map<std::string, std::string> indexed;  // index name -> value
  };

  void Loop(bool resume);
  void Dispatch();                           // the dispatch thread: hands changes to deliver_
  void Queue(std::string key, Value value);  // queues a change for Dispatch
  Status ListAndReplace();
  Status WatchOnce();  // kExpired when the server says the version is gone
  void Apply(const WatchEvent& input);
  // `object` as cached: its value (nullptr when it cannot be decoded), version and indexes.
  Entry Make(const nlohmann::json& object, Value reuse = nullptr);
  // The cache's writes, which keep the indexes; mu_ held.
  void Put(const std::string& key, Entry entry);
  void Erase(const std::string& key);
  void Unindex(const std::string& key, const Entry& entry);
  void Backoff(std::chrono::milliseconds& delay);
  // Logs a failed list or watch when its message differs from the last one (a 403 from
  // missing RBAC says so once, not at every retry), and the recovery after one.
  void Report(const char* what, const Status& status);

  const Client& client_;
  Options options_;
  Decode decode_;
  Deliver deliver_;

  mutable std::mutex mu_;
  std::condition_variable cv_;          // signals sync and stop
  std::condition_variable pending_cv_;  // signals a queued change and stop
  std::deque<std::pair<std::string, Value>> pending_;
  std::map<std::string, Entry> cache_;
  // Index name -> value -> keys.
  std::map<std::string, std::map<std::string, std::set<std::string>>> index_;
  std::string resource_version_;
  bool synced_ = false;

  std::atomic<bool> stop_{false};
  std::atomic<int> relists_{0};
  std::atomic<int> reconnects_{0};
  std::atomic<long> decodes_{0};
  std::string last_error_;  // the informer thread's own
  std::thread thread_;
  std::thread dispatcher_;
};

// An informer whose cache keeps what `decode` makes of each object: a T read by pointer, never
// copied or parsed again.
template <typename T>
class TypedInformer : public InformerBase {
 public:
  // Makes the value of an object as it arrives (managedFields already dropped); must not
  // throw: anything may be in an object, so a decoder reads leniently or records what it
  // could not read in the T.
  using Decoder = std::function<T(const nlohmann::json& object)>;
  // As InformerBase::Deliver, with the value typed.
  using Handler = std::function<void(const std::string& key, const T& object)>;

  TypedInformer(const Client& client, Options options, Decoder decode, Handler handler)
      : InformerBase(
            client, std::move(options),
            [decode = std::move(decode)](const nlohmann::json& object) -> Value {
              return std::make_shared<const T>(decode(object));
            },
            [handler = std::move(handler)](const std::string& key, const Value& value) {
              handler(key, *static_cast<const T*>(value.get()));
            }) {}

  // The object as cached, shared; nullptr when there is none.
  std::shared_ptr<const T> Get(const std::string& key) const {
    return std::static_pointer_cast<const T>(Find(key));
  }
  std::vector<std::shared_ptr<const T>> List() const { return Typed(All()); }
  std::vector<std::shared_ptr<const T>> ByIndex(const std::string& index,
                                                const std::string& value) const {
    return Typed(Indexed(index, value));
  }

 private:
  static std::vector<std::shared_ptr<const T>> Typed(const std::vector<Value>& values) {
    std::vector<std::shared_ptr<const T>> out;
    out.reserve(values.size());
    for (const Value& v : values) out.push_back(std::static_pointer_cast<const T>(v));
    return out;
  }
};

// An informer that keeps the objects' JSON, for readers that want the whole object (a router's
// pods, test tools). Reads return copies of the cached trees.
class Informer : public InformerBase {
 public:
  using Handler = std::function<void(const std::string& key, const nlohmann::json& object)>;

  Informer(const Client& client, Options options, Handler handler);

  std::optional<nlohmann::json> Get(const std::string& key) const;
  std::vector<nlohmann::json> List() const;
  std::vector<nlohmann::json> ByIndex(const std::string& index, const std::string& value) const;
};

}  // namespace pipescale::kube
