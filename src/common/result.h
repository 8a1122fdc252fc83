// Result/Status: expected failures travel as values (std::expected), never as
// exceptions. An Error says what was wrong, where, and what to do about it, so
// the message that reaches a person is complete without a stack trace.
#pragma once

#include <expected>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace tidal {

enum class ErrorCode {
  kInvalidArgument,  // the caller asked for something malformed
  kParse,            // an input file/line/field could not be read
  kNotFound,         // a named thing does not exist
  kUnschedulable,    // does not fit now; time or preemption may help
  kUnresolvable,     // can never fit as asked
  kDeferred,         // fits now, but its placer waits for a better placement (retry soon)
  kFailedPrecondition,
  kIo,
  kInternal,
};

const char* ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;

  std::string ToString() const { return fmt::format("{}: {}", ErrorCodeName(code), message); }
};

template <typename T>
using Result = std::expected<T, Error>;
using Status = std::expected<void, Error>;

template <typename... Args>
std::unexpected<Error> MakeError(ErrorCode code, fmt::format_string<Args...> f, Args&&... args) {
  return std::unexpected(Error{code, fmt::format(f, std::forward<Args>(args)...)});
}

inline Status Ok() { return {}; }

}  // namespace tidal

// Propagates an error from an expression returning Result/Status.
#define TIDAL_RETURN_IF_ERROR(expr)                          \
  do {                                                       \
    auto _tidal_status = (expr);                             \
    if (!_tidal_status) return std::unexpected(std::move(_tidal_status).error()); \
  } while (0)

#define TIDAL_CONCAT_INNER(a, b) a##b
#define TIDAL_CONCAT(a, b) TIDAL_CONCAT_INNER(a, b)
#define TIDAL_ASSIGN_OR_RETURN(lhs, expr) \
  TIDAL_ASSIGN_OR_RETURN_IMPL(TIDAL_CONCAT(_tidal_result_, __LINE__), lhs, expr)
#define TIDAL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)            \
  auto tmp = (expr);                                           \
  if (!tmp) return std::unexpected(std::move(tmp).error());    \
  lhs = std::move(*tmp)
