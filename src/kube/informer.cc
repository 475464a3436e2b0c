#include "kube/informer.h"

#include <algorithm>
#include <random>
#include <utility>

#include "common/guard.h"
#include "common/json_fields.h"
#include "common/log.h"

namespace pipescale::kube {
namespace {

// metadata.managedFields is often the largest part of an object and nothing here reads it;
// dropping it from the cache cuts the operator's memory with many objects by about a third.
void Trim(nlohmann::json& object) {
  if (auto it = object.find("metadata"); it != object.end() && it->is_object()) {
    it->erase("managedFields");
  }
}

// metadata.resourceVersion, or "" when the object has none.
std::string ResourceVersion(const nlohmann::json& object) {
  return StringField(Member(object, "metadata"), "resourceVersion");
}

}  // namespace

std::string ObjectKey(const nlohmann::json& object) {
  const nlohmann::json& meta = Member(object, "metadata");
  const std::string name = StringField(meta, "name");
  const std::string ns = StringField(meta, "namespace");
  return ns.empty() ? name : ns + "/" + name;
}

InformerBase::InformerBase(const Client& client, Options options, Decode decode, Deliver deliver)
    : client_(client),
      options_(std::move(options)),
      decode_(std::move(decode)),
      deliver_(std::move(deliver)) {}

InformerBase::~InformerBase() { Stop(); }

void InformerBase::Start() {
  stop_ = false;
  // A throw in the loop is a bug; the loop starts over with a fresh list, after a backoff.
  thread_ = std::thread([this] {
    bool resume = !options_.resume_from.empty();
    RunWithRestarts(options_.component, stop_, [&] {
      const bool first_resume = std::exchange(resume, false);
      Loop(first_resume);
    });
  });
  dispatcher_ = std::thread([this] { Dispatch(); });
}

void InformerBase::RequestStop() {
  {
    std::lock_guard lock(mu_);  // so a thread between its check and its wait cannot miss it
    stop_ = true;
  }
  cv_.notify_all();
  pending_cv_.notify_all();
}

void InformerBase::Stop() {
  RequestStop();
  if (thread_.joinable()) thread_.join();
  if (dispatcher_.joinable()) dispatcher_.join();
}

void InformerBase::Queue(std::string key, Value value) {
  {
    std::lock_guard lock(mu_);
    pending_.emplace_back(std::move(key), std::move(value));
  }
  pending_cv_.notify_one();
}

void InformerBase::Dispatch() {
  for (;;) {
    std::unique_lock lock(mu_);
    pending_cv_.wait(lock, [this] { return stop_.load() || !pending_.empty(); });
    if (stop_) return;
    const auto change = std::move(pending_.front());
    pending_.pop_front();
    lock.unlock();
    Guard(options_.component, [&] { deliver_(change.first, change.second); });
  }
}

bool InformerBase::WaitForSync(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return synced_ || stop_.load(); }) && synced_;
}

bool InformerBase::Synced() const {
  std::lock_guard lock(mu_);
  return synced_;
}

InformerBase::Value InformerBase::Find(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = cache_.find(key);
  return it == cache_.end() ? nullptr : it->second.value;
}

bool InformerBase::Contains(const std::string& key) const {
  std::lock_guard lock(mu_);
  return cache_.contains(key);
}

std::vector<InformerBase::Value> InformerBase::Indexed(const std::string& index,
                                                       const std::string& value) const {
  std::vector<Value> out;
  std::lock_guard lock(mu_);
  const auto by_value = index_.find(index);
  if (by_value == index_.end()) return out;
  const auto keys = by_value->second.find(value);
  if (keys == by_value->second.end()) return out;
  out.reserve(keys->second.size());
  for (const std::string& key : keys->second) out.push_back(cache_.at(key).value);
  return out;
}

std::vector<InformerBase::Value> InformerBase::All() const {
  std::vector<Value> out;
  std::lock_guard lock(mu_);
  out.reserve(cache_.size());
  for (const auto& [key, entry] : cache_) out.push_back(entry.value);
  return out;
}

InformerBase::Entry InformerBase::Make(const nlohmann::json& object, Value reuse) {
  Entry entry{
      .value = std::move(reuse), .resource_version = ResourceVersion(object), .indexed = {}};
  if (entry.value == nullptr) {
    // A throw is a decoder's bug: counted, and the object left out rather than the watch
    // restarted on it again and again.
    if (Guard(options_.component, [&] { entry.value = decode_(object); })) ++decodes_;
  }
  for (const auto& [name, value_of] : options_.indexes) {
    std::string value = value_of(object);
    if (!value.empty()) entry.indexed.emplace(name, std::move(value));
  }
  return entry;
}

void InformerBase::Unindex(const std::string& key, const Entry& entry) {
  for (const auto& [name, value] : entry.indexed) {
    auto& keys = index_[name];
    if (auto it = keys.find(value); it != keys.end()) {
      it->second.erase(key);
      if (it->second.empty()) keys.erase(it);
    }
  }
}

void InformerBase::Put(const std::string& key, Entry entry) {
  Erase(key);
  if (entry.value == nullptr) return;  // could not be decoded: as if absent
  for (const auto& [name, value] : entry.indexed) index_[name][value].insert(key);
  cache_.emplace(key, std::move(entry));
}

void InformerBase::Erase(const std::string& key) {
  auto it = cache_.find(key);
  if (it == cache_.end()) return;
  Unindex(key, it->second);
  cache_.erase(it);
}

std::string InformerBase::resource_version() const {
  std::lock_guard lock(mu_);
  return resource_version_;
}

void InformerBase::Backoff(std::chrono::milliseconds& delay) {
  // Full jitter, so many informers that failed together do not retry together.
  static thread_local std::mt19937 rng(std::random_device{}());
  const auto wait = std::chrono::milliseconds(
      std::uniform_int_distribution<long>(delay.count() / 2, delay.count())(rng));
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, wait, [this] { return stop_.load(); });
  delay = std::min(delay * 2, options_.max_backoff);
}

void InformerBase::Report(const char* what, const Status& status) {
  const std::string scope = options_.namespace_name.empty() ? "*" : options_.namespace_name;
  if (status.ok()) {
    if (!last_error_.empty()) {
      Log("info", std::string(what) + " works again",
          {{"resource", options_.type.plural}, {"namespace", scope}});
    }
    last_error_.clear();
    return;
  }
  if (status.error().message == last_error_) return;
  last_error_ = status.error().message;
  // A 4xx (forbidden, not found) will not heal by itself: someone must grant or install.
  const bool lasting =
      status.error().kind == ErrorKind::kInvalid || status.error().kind == ErrorKind::kNotFound;
  Log(lasting ? "error" : "warning", std::string("cannot ") + what + "; retrying",
      {{"resource", options_.type.plural}, {"namespace", scope}, {"error", last_error_}});
}

void InformerBase::Loop(bool resume) {
  bool need_list = !resume;
  if (resume) {
    std::lock_guard lock(mu_);
    resource_version_ = options_.resume_from;
    synced_ = true;
    cv_.notify_all();
  }
  auto delay = options_.min_backoff;
  while (!stop_) {
    if (need_list) {
      const Status listed = ListAndReplace();
      Report("list", listed);
      if (!listed) {
        Backoff(delay);
        continue;
      }
      need_list = false;
      delay = options_.min_backoff;
    }
    const Status s = WatchOnce();
    if (stop_) break;
    if (s.ok()) {
      delay = options_.min_backoff;  // the server closed a healthy watch: rewatch at once
      continue;
    }
    ++reconnects_;
    if (s.error().kind == ErrorKind::kExpired) {
      need_list = true;  // our version is gone from the server's history: start over
      continue;
    }
    Report("watch", s);
    Backoff(delay);
  }
}

Status InformerBase::ListAndReplace() {
  std::string path = CollectionPath(options_.type, options_.namespace_name);
  if (!options_.label_selector.empty()) {
    path += "?labelSelector=" + QueryEscape(options_.label_selector);
  }
  auto list = client_.Get(path);
  if (!list) return list.error();
  std::map<std::string, nlohmann::json*> listed;
  nlohmann::json& body = list.value();
  auto items = body.find("items");
  if (items != body.end() && items->is_array()) {
    for (auto& item : *items) {
      Trim(item);
      if (std::string key = ObjectKey(item); !key.empty()) listed[std::move(key)] = &item;
    }
  }
  // What the cache holds at the listed version is kept as it is: a version never changes, so
  // only the others are decoded (outside the lock) and delivered as changes.
  std::map<std::string, Value> unchanged;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, item] : listed) {
      auto it = cache_.find(key);
      const std::string version = ResourceVersion(*item);
      if (it != cache_.end() && !version.empty() && it->second.resource_version == version) {
        unchanged.emplace(key, it->second.value);
      }
    }
  }
  std::map<std::string, Entry> fresh;
  std::vector<std::pair<std::string, Value>> changed;
  for (const auto& [key, item] : listed) {
    auto kept = unchanged.find(key);
    Entry entry = Make(*item, kept == unchanged.end() ? nullptr : kept->second);
    // The listed object is not needed once decoded: freed now, the list's tree and the cache's
    // values are never all in memory at once (the operator's peak at a start with thousands).
    *item = nullptr;
    if (kept == unchanged.end() && entry.value != nullptr) changed.emplace_back(key, entry.value);
    fresh.emplace(key, std::move(entry));
  }
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, entry] : cache_) {
      // Deleted while we were not watching.
      if (!fresh.contains(key)) changed.emplace_back(key, entry.value);
    }
    cache_.clear();
    index_.clear();
    for (auto& [key, entry] : fresh) Put(key, std::move(entry));
    resource_version_ = ResourceVersion(*list);
    synced_ = true;
    ++relists_;
  }
  cv_.notify_all();
  for (auto& [key, value] : changed) Queue(std::move(key), std::move(value));
  return Done{};
}

Status InformerBase::WatchOnce() {
  std::string path = CollectionPath(options_.type, options_.namespace_name) +
                     "?watch=1&allowWatchBookmarks=true&timeoutSeconds=" +
                     std::to_string(options_.watch_timeout_seconds) +
                     "&resourceVersion=" + QueryEscape(resource_version());
  if (!options_.label_selector.empty()) {
    path += "&labelSelector=" + QueryEscape(options_.label_selector);
  }
  std::optional<Error> in_stream;
  Status s = client_.Watch(
      path,
      [&](const WatchEvent& e) {
        if (e.type == "ERROR") {
          // A Status object; code 410 means our resourceVersion was compacted away.
          const bool expired = IntField(e.object, "code", 0) == 410;
          in_stream = Error{expired ? ErrorKind::kExpired : ErrorKind::kTransient,
                            "watch error event: " + e.object.dump()};
          return false;
        }
        Apply(e);
        return true;
      },
      stop_);
  if (in_stream) return *in_stream;
  return s;
}

void InformerBase::Apply(const WatchEvent& input) {
  WatchEvent event = input;
  Trim(event.object);
  const std::string rv = ResourceVersion(event.object);
  if (event.type == "BOOKMARK") {
    std::lock_guard lock(mu_);
    resource_version_ = rv;  // progress without a change: resume from here next time
    return;
  }
  const std::string key = ObjectKey(event.object);
  if (key.empty()) return;  // not an object with a name: nothing to cache
  // Decoded outside the lock; a deleted object too, for the handler: as it last was.
  Entry entry = Make(event.object);
  Value value = entry.value;
  {
    std::lock_guard lock(mu_);
    if (event.type == "DELETED") {
      Erase(key);
    } else {
      Put(key, std::move(entry));
    }
    resource_version_ = rv;
  }
  if (value != nullptr) Queue(key, std::move(value));
}

Informer::Informer(const Client& client, Options options, Handler handler)
    : InformerBase(
          client, std::move(options),
          [](const nlohmann::json& object) -> Value {
            return std::make_shared<const nlohmann::json>(object);
          },
          [handler = std::move(handler)](const std::string& key, const Value& value) {
            handler(key, *static_cast<const nlohmann::json*>(value.get()));
          }) {}

std::optional<nlohmann::json> Informer::Get(const std::string& key) const {
  const Value value = Find(key);
  if (value == nullptr) return std::nullopt;
  return *static_cast<const nlohmann::json*>(value.get());
}

namespace {

std::vector<nlohmann::json> Copies(const std::vector<std::shared_ptr<const void>>& values) {
  std::vector<nlohmann::json> out;
  out.reserve(values.size());
  for (const auto& v : values) out.push_back(*static_cast<const nlohmann::json*>(v.get()));
  return out;
}

}  // namespace

std::vector<nlohmann::json> Informer::List() const { return Copies(All()); }

std::vector<nlohmann::json> Informer::ByIndex(const std::string& index,
                                              const std::string& value) const {
  return Copies(Indexed(index, value));
}

}  // namespace pipescale::kube
