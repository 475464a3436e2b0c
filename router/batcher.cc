#include "batcher.h"

#include <algorithm>

#include "common/guard.h"

namespace pipescale::router {

double Batcher::Now() const {
  return std::chrono::duration<double, std::milli>(Clock::now() - epoch_).count();
}

void Batcher::Configure(int batch_size, double wait_ms) {
  std::lock_guard lock(mu_);
  if (batch_size == batch_size_ && wait_ms == wait_ms_) return;
  batch_size_ = batch_size;
  wait_ms_ = wait_ms;
  for (auto& [signature, former] : formers_) former.Reconfigure(batch_size, wait_ms);
  // A smaller batch or a shorter wait may make a batch ready now: every waiter looks again.
  for (const auto& [id, w] : waiters_) {
    asio::post(w->wake.get_executor(), [w = w] { w->wake.cancel(); });
  }
}

std::pair<int, double> Batcher::config() const {
  std::lock_guard lock(mu_);
  return {batch_size_, wait_ms_};
}

Batcher::Batch Batcher::Take(routing::BatchFormer& former) {
  Batch batch;
  for (std::uint64_t id : former.Take(Now())) {
    auto w = waiters_.extract(id);
    w.mapped()->taken = true;
    batch.push_back(std::move(w.mapped()));
  }
  return batch;
}

asio::awaitable<void> Batcher::Lead(const Batch& batch, const Send& send) {
  std::vector<std::string_view> inputs;
  std::vector<int> rows;
  for (const auto& w : batch) {
    inputs.push_back(w->body->inputs);
    rows.push_back(w->rows);
  }
  Result<CallReply> reply = Error{ErrorKind::kInvalid, ""};
  auto stacked = routing::StackInputs(inputs);
  if (stacked) {
    const routing::Body& first =
        *batch[0]->body;  // its id, parameters and other members speak for all
    const std::string inputs_text = std::move(*stacked);
    const routing::Body request{.inputs = inputs_text,
                                .id = first.id,
                                .others = first.others,
                                .parameters = first.parameters};
    int total = 0;
    for (int r : rows) total += r;
    // The followers this request took wait for it: a throw must still answer each of them.
    std::optional<std::string> threw;
    try {
      reply = co_await send(request, total);
    } catch (...) {
      threw = CurrentExceptionMessage();
    }
    if (threw) {
      ReportPanic("router-batcher", *threw);
      reply =
          Error{ErrorKind::kTransient, "the call for the batch failed; the router's log says why"};
    }
  } else {
    reply = stacked.error();
  }
  // Each request's rows of the answer, with the batch's parameters.
  std::vector<Result<CallReply>> answers(batch.size(), reply.ok() ? Error{} : reply.error());
  if (reply.ok()) {
    auto members = routing::ScanObject(reply->body);
    auto split = members ? routing::SplitOutputs(routing::Find(*members, "outputs"), rows)
                         : Result<std::vector<std::string>>(members.error());
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!split) {
        answers[i] = Error{ErrorKind::kInvalid, "the answer to a batch: " + split.error().message};
        continue;
      }
      std::string body = "{\"outputs\":" + (*split)[i];
      const std::string_view parameters = routing::Find(*members, "parameters");
      if (!parameters.empty()) (body += ",\"parameters\":") += parameters;
      answers[i] =
          CallReply{.body = body + '}', .variant = reply->variant, .seconds = reply->seconds};
    }
  }
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i]->reply = std::move(answers[i]);
    asio::post(batch[i]->wake.get_executor(), [w = batch[i]] { w->wake.cancel(); });
  }
}

asio::awaitable<Result<CallReply>> Batcher::Submit(const routing::Body& body,
                                                   Clock::time_point deadline, const Send& send) {
  // Binary data is passed on as it came, never cut or stacked: such a request goes alone.
  if (body.binary_outputs) co_return co_await send(body, 1);
  auto key = routing::KeyOf(body.inputs);
  if (!key) co_return co_await send(body, 1);  // not stackable: alone, as the client sent it
  auto w = std::make_shared<Waiter>(co_await asio::this_coro::executor);
  w->body = &body;
  w->rows = key->rows;
  std::unique_lock lock(mu_);
  const std::uint64_t id = next_++;
  routing::BatchFormer& former =
      formers_.try_emplace(key->signature, batch_size_, wait_ms_).first->second;
  former.Add(id, key->rows, Now());
  waiters_[id] = w;
  while (!w->reply) {
    const Batch batch = Take(former);
    if (!batch.empty()) {  // this request noticed: it sends the batch, its own or not
      lock.unlock();
      co_await Lead(batch, send);
      lock.lock();
      continue;
    }
    if (!w->taken && Clock::now() >= deadline) {
      former.Remove(id);
      waiters_.erase(id);
      lock.unlock();
      co_return Error{ErrorKind::kExpired,
                      "the deadline passed while the request waited for its batch"};
    }
    auto until = Clock::time_point::max();
    if (!w->taken) {
      const double due = former.DueMs();
      until = std::min(
          deadline, epoch_ + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double, std::milli>(std::min(due, 1e12))));
    }
    w->wake.expires_at(until);
    lock.unlock();
    // Woken at the batch's due time, by the answer, or by a new configuration.
    beast::error_code ec;
    co_await w->wake.async_wait(Redirect(ec));
    lock.lock();
  }
  Result<CallReply> reply = std::move(*w->reply);
  lock.unlock();
  co_return reply;
}

}  // namespace pipescale::router
