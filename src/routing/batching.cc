#include "routing/batching.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "routing/body.h"

namespace pipescale::routing {
namespace {

Error Invalid(std::string message) { return Error{ErrorKind::kInvalid, std::move(message)}; }

// A tensor object's parts as text: every member but shape and data kept as written.
struct Tensor {
  std::string_view name, datatype;
  std::vector<long> shape;
  std::vector<std::string_view> data;  // the array's elements
  std::string rest;                    // other members, "key":value joined by commas
};

Result<Tensor> ReadTensor(std::string_view text, const std::string& where, bool with_data) {
  auto members = ScanObject(text);
  if (!members) return Invalid(where + " is not an object");
  Tensor t;
  t.name = Find(*members, "name");
  t.datatype = Find(*members, "datatype");
  auto dims = ScanArray(Find(*members, "shape"));
  if (!dims || dims->empty()) return Invalid(where + ".shape must be a non-empty array");
  for (std::string_view d : *dims) {
    long v = -1;
    const auto [end, ec] = std::from_chars(d.data(), d.data() + d.size(), v);
    if (ec != std::errc() || end != d.data() + d.size() || v < 0) {
      return Invalid(where + ".shape must hold non-negative integers");
    }
    t.shape.push_back(v);
  }
  if (with_data) {
    auto data = ScanArray(Find(*members, "data"));
    if (!data) return Invalid(where + ".data must be an array");
    t.data = std::move(*data);
  }
  for (const Member& m : *members) {
    if (m.key == "name" || m.key == "datatype" || m.key == "shape" || m.key == "data") continue;
    (((t.rest += t.rest.empty() ? "\"" : ",\"") += m.key) += "\":") += m.value;
  }
  return t;
}

std::string Join(const std::vector<std::string_view>& items, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) (out += i > from ? "," : "") += items[i];
  return out;
}

std::string Render(const Tensor& t, long rows, const std::string& data) {
  std::string out = "{\"name\":" + std::string(t.name.empty() ? "\"\"" : t.name);
  if (!t.datatype.empty()) (out += ",\"datatype\":") += t.datatype;
  out += ",\"shape\":[" + std::to_string(rows);
  for (size_t d = 1; d < t.shape.size(); ++d) out += "," + std::to_string(t.shape[d]);
  ((out += "],\"data\":[") += data) += ']';
  if (!t.rest.empty()) (out += ',') += t.rest;
  return out + '}';
}

}  // namespace

void BatchFormer::Reconfigure(int batch_size, double wait_ms) {
  batch_size_ = std::max(1, batch_size);
  wait_ms_ = std::max(0.0, wait_ms);
}

void BatchFormer::Add(std::uint64_t id, int rows, double now_ms) {
  queue_.push_back({id, std::max(1, rows), now_ms});
  rows_ += queue_.back().rows;
}

std::vector<std::uint64_t> BatchFormer::Take(double now_ms) {
  if (queue_.empty() || (rows_ < batch_size_ && now_ms < DueMs())) return {};
  std::vector<std::uint64_t> batch;
  int taken = 0;
  while (!queue_.empty() && (batch.empty() || taken + queue_.front().rows <= batch_size_)) {
    taken += queue_.front().rows;
    batch.push_back(queue_.front().id);
    queue_.pop_front();
  }
  rows_ -= taken;
  return batch;
}

double BatchFormer::DueMs() const {
  return queue_.empty() ? std::numeric_limits<double>::infinity()
                        : queue_.front().since_ms + wait_ms_;
}

bool BatchFormer::Remove(std::uint64_t id) {
  const auto it =
      std::find_if(queue_.begin(), queue_.end(), [&](const Waiting& w) { return w.id == id; });
  if (it == queue_.end()) return false;
  rows_ -= it->rows;
  queue_.erase(it);
  return true;
}

Result<BatchKey> KeyOf(std::string_view inputs) {
  auto items = ScanArray(inputs);
  if (!items || items->empty()) return Invalid("inputs must be a non-empty array");
  BatchKey key;
  for (size_t i = 0; i < items->size(); ++i) {
    auto t = ReadTensor((*items)[i], "inputs[" + std::to_string(i) + "]", false);
    if (!t) return t.error();
    if (i > 0 && t->shape[0] != key.rows) {
      return Invalid("inputs[" + std::to_string(i) + "] has another first dimension");
    }
    key.rows = static_cast<int>(std::min<long>(t->shape[0], 1 << 30));
    ((key.signature += t->name) += ' ') += t->datatype;
    for (size_t d = 1; d < t->shape.size(); ++d) key.signature += ' ' + std::to_string(t->shape[d]);
    key.signature += ';';
  }
  return key;
}

Result<std::string> StackInputs(const std::vector<std::string_view>& inputs) {
  std::vector<Tensor> stacked;
  std::vector<long> rows;
  std::vector<std::string> data;
  for (size_t r = 0; r < inputs.size(); ++r) {
    auto items = ScanArray(inputs[r]);
    if (!items || (r > 0 && items->size() != stacked.size())) {
      return Invalid("the batch's requests have different inputs");
    }
    for (size_t i = 0; i < items->size(); ++i) {
      auto t = ReadTensor((*items)[i], "inputs[" + std::to_string(i) + "]", true);
      if (!t) return t.error();
      if (r == 0) {
        stacked.push_back(*t);
        rows.push_back(0);
        data.emplace_back();
      }
      rows[i] += t->shape[0];
      if (!t->data.empty())
        (data[i] += data[i].empty() ? "" : ",") += Join(t->data, 0, t->data.size());
    }
  }
  std::string out = "[";
  for (size_t i = 0; i < stacked.size(); ++i) {
    (out += i > 0 ? "," : "") += Render(stacked[i], rows[i], data[i]);
  }
  return out + ']';
}

Result<std::vector<std::string>> SplitOutputs(std::string_view outputs,
                                              const std::vector<int>& rows) {
  long total = 0;
  for (int r : rows) total += r;
  std::vector<std::string> out(rows.size(), "[");
  auto items = ScanArray(outputs);
  if (!items) return Invalid("outputs must be an array");
  for (size_t i = 0; i < items->size(); ++i) {
    auto t = ReadTensor((*items)[i], "outputs[" + std::to_string(i) + "]", true);
    if (!t) return t.error();
    const std::string sep = i > 0 ? "," : "";
    if (t->shape[0] != total) {  // not per row: every request gets it whole
      for (std::string& o : out) (o += sep) += (*items)[i];
      continue;
    }
    long inner = 1;
    for (size_t d = 1; d < t->shape.size(); ++d) {
      if (__builtin_mul_overflow(inner, t->shape[d], &inner)) inner = -1;
    }
    const long elements = static_cast<long>(t->data.size());
    long per_batch = -1;
    if (inner < 0 || __builtin_mul_overflow(total, inner, &per_batch)) per_batch = -1;
    const long stride = elements == per_batch ? inner : elements == total ? 1 : -1;
    if (stride < 0) {
      return Invalid("outputs[" + std::to_string(i) + "] has " + std::to_string(elements) +
                     " elements for its shape");
    }
    size_t at = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
      const size_t end = at + static_cast<size_t>(rows[r] * stride);
      (out[r] += sep) += Render(*t, rows[r], Join(t->data, at, end));
      at = end;
    }
  }
  for (std::string& o : out) o += ']';
  return out;
}

}  // namespace pipescale::routing
