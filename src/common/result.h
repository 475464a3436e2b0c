// Result<T>: an expected failure carried as a value. A small subset of std::expected, which
// libstdc++ 12 does not ship in C++20 mode.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "common/check.h"

namespace pipescale {

enum class ErrorKind {
  kInvalid,      // the input is wrong; retrying will not help
  kNotFound,     // the thing asked for does not exist
  kConflict,     // a concurrent writer won; re-read and retry
  kTransient,    // the outside world failed (network, timeout, 5xx); retry with backoff
  kExpired,      // a resourceVersion is too old (HTTP 410 Gone), or a deadline passed
  kUnavailable,  // at capacity now (a full queue); try again later
};

const char* ErrorKindName(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::kInvalid;
  std::string message;

  bool operator==(const Error&) const = default;
};

// The value of a Result that carries nothing but success.
struct Done {
  bool operator==(const Done&) const = default;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  const T& value() const& {
    PIPESCALE_CHECK(ok());
    return std::get<T>(state_);
  }
  T& value() & {
    PIPESCALE_CHECK(ok());
    return std::get<T>(state_);
  }
  T&& value() && {
    PIPESCALE_CHECK(ok());
    return std::get<T>(std::move(state_));
  }
  const Error& error() const {
    PIPESCALE_CHECK(!ok());
    return std::get<Error>(state_);
  }

  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Error> state_;
};

using Status = Result<Done>;

}  // namespace pipescale
