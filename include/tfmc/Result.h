//===- tfmc/Result.h - a value or an error message --------------*- C++ -*-===//
//
// Part of tfmc's public C++ API. Errors cross the API as values, never as
// exceptions: a Result holds either a T or a one-line message.
//
//===----------------------------------------------------------------------===//
#ifndef TFMC_RESULT_H
#define TFMC_RESULT_H

#include <optional>
#include <string>
#include <utility>

namespace tfmc {

template <typename T> class Result {
public:
  Result(T value) : val(std::move(value)) {}
  static Result failure(std::string message) {
    Result r;
    r.message = std::move(message);
    return r;
  }

  explicit operator bool() const { return val.has_value(); }
  T &operator*() { return *val; }
  const T &operator*() const { return *val; }
  T *operator->() { return &*val; }
  const T *operator->() const { return &*val; }
  /// The error message ("" on success).
  const std::string &error() const { return message; }

private:
  Result() = default;
  std::optional<T> val;
  std::string message;
};

} // namespace tfmc

#endif // TFMC_RESULT_H
