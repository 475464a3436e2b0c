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

Informer::Informer(const Client& client, Options options, Handler handler)
    : client_(client), options_(std::move(options)), handler_(std::move(handler)) {}

Informer::~Informer() { Stop(); }

void Informer::Start() {
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

void Informer::RequestStop() {
  {
    std::lock_guard lock(mu_);  // so a thread between its check and its wait cannot miss it
    stop_ = true;
  }
  cv_.notify_all();
  pending_cv_.notify_all();
}

void Informer::Stop() {
  RequestStop();
  if (thread_.joinable()) thread_.join();
  if (dispatcher_.joinable()) dispatcher_.join();
}

void Informer::Deliver(std::string key, nlohmann::json object) {
  {
    std::lock_guard lock(mu_);
    pending_.emplace_back(std::move(key), std::move(object));
  }
  pending_cv_.notify_one();
}

void Informer::Dispatch() {
  for (;;) {
    std::unique_lock lock(mu_);
    pending_cv_.wait(lock, [this] { return stop_.load() || !pending_.empty(); });
    if (stop_) return;
    const auto change = std::move(pending_.front());
    pending_.pop_front();
    lock.unlock();
    Guard(options_.component, [&] { handler_(change.first, change.second); });
  }
}

bool Informer::WaitForSync(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return synced_ || stop_.load(); }) && synced_;
}

bool Informer::Synced() const {
  std::lock_guard lock(mu_);
  return synced_;
}

std::optional<nlohmann::json> Informer::Get(const std::string& key) const {
  std::string text;
  {
    std::lock_guard lock(mu_);
    auto it = cache_.find(key);
    if (it == cache_.end()) return std::nullopt;
    text = it->second.text;
  }
  return nlohmann::json::parse(text);  // our own dump: parsed outside the lock, cannot fail
}

bool Informer::Contains(const std::string& key) const {
  std::lock_guard lock(mu_);
  return cache_.contains(key);
}

std::vector<nlohmann::json> Informer::Parse(const std::vector<std::string>& texts) {
  std::vector<nlohmann::json> out;
  out.reserve(texts.size());
  for (const std::string& text : texts) out.push_back(nlohmann::json::parse(text));
  return out;
}

std::vector<nlohmann::json> Informer::ByIndex(const std::string& index,
                                              const std::string& value) const {
  std::vector<std::string> texts;
  {
    std::lock_guard lock(mu_);
    const auto by_value = index_.find(index);
    if (by_value == index_.end()) return {};
    const auto keys = by_value->second.find(value);
    if (keys == by_value->second.end()) return {};
    texts.reserve(keys->second.size());
    for (const std::string& key : keys->second) texts.push_back(cache_.at(key).text);
  }
  return Parse(texts);
}

void Informer::Unindex(const std::string& key, const Entry& entry) {
  for (const auto& [name, value] : entry.indexed) {
    auto& keys = index_[name];
    if (auto it = keys.find(value); it != keys.end()) {
      it->second.erase(key);
      if (it->second.empty()) keys.erase(it);
    }
  }
}

void Informer::Put(const std::string& key, const nlohmann::json& object, std::string text) {
  if (auto it = cache_.find(key); it != cache_.end()) Unindex(key, it->second);
  Entry entry{.text = std::move(text), .indexed = {}};
  for (const auto& [name, value_of] : options_.indexes) {
    std::string value = value_of(object);
    if (value.empty()) continue;
    index_[name][value].insert(key);
    entry.indexed.emplace(name, std::move(value));
  }
  cache_[key] = std::move(entry);
}

void Informer::Erase(const std::string& key) {
  auto it = cache_.find(key);
  if (it == cache_.end()) return;
  Unindex(key, it->second);
  cache_.erase(it);
}

std::vector<nlohmann::json> Informer::List() const {
  std::vector<std::string> texts;
  {
    std::lock_guard lock(mu_);
    texts.reserve(cache_.size());
    for (const auto& [key, entry] : cache_) texts.push_back(entry.text);
  }
  return Parse(texts);
}

std::string Informer::resource_version() const {
  std::lock_guard lock(mu_);
  return resource_version_;
}

void Informer::Backoff(std::chrono::milliseconds& delay) {
  // Full jitter, so many informers that failed together do not retry together.
  static thread_local std::mt19937 rng(std::random_device{}());
  const auto wait = std::chrono::milliseconds(
      std::uniform_int_distribution<long>(delay.count() / 2, delay.count())(rng));
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, wait, [this] { return stop_.load(); });
  delay = std::min(delay * 2, options_.max_backoff);
}

void Informer::Report(const char* what, const Status& status) {
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

void Informer::Loop(bool resume) {
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

Status Informer::ListAndReplace() {
  std::string path = CollectionPath(options_.type, options_.namespace_name);
  if (!options_.label_selector.empty()) {
    path += "?labelSelector=" + QueryEscape(options_.label_selector);
  }
  auto list = client_.Get(path);
  if (!list) return list.error();
  // Each object with its text, dumped once and outside the lock: compared with the cache's, then
  // kept.
  std::map<std::string, std::pair<nlohmann::json, std::string>> fresh;
  nlohmann::json& body = list.value();
  auto items = body.find("items");
  if (items != body.end() && items->is_array()) {
    for (auto& item : *items) {
      Trim(item);
      std::string key = ObjectKey(item);
      if (key.empty()) continue;
      std::string text = item.dump();
      fresh.emplace(std::move(key), std::pair{std::move(item), std::move(text)});
    }
  }

  std::vector<std::pair<std::string, nlohmann::json>> changed;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, listed] : fresh) {
      auto it = cache_.find(key);
      if (it == cache_.end() || it->second.text != listed.second) {
        changed.emplace_back(key, listed.first);
      }
    }
    for (const auto& [key, entry] : cache_) {
      // Deleted while we were not watching.
      if (!fresh.contains(key)) changed.emplace_back(key, nlohmann::json::parse(entry.text));
    }
    cache_.clear();
    index_.clear();
    for (auto& [key, listed] : fresh) Put(key, listed.first, std::move(listed.second));
    resource_version_ = ResourceVersion(*list);
    synced_ = true;
    ++relists_;
  }
  cv_.notify_all();
  for (auto& [key, object] : changed) Deliver(std::move(key), std::move(object));
  return Done{};
}

Status Informer::WatchOnce() {
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

void Informer::Apply(const WatchEvent& input) {
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
  {
    std::lock_guard lock(mu_);
    if (event.type == "DELETED") {
      Erase(key);
    } else {
      Put(key, event.object, event.object.dump());
    }
    resource_version_ = rv;
  }
  Deliver(key, std::move(event.object));
}

}  // namespace pipescale::kube
