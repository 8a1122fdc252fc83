// The API's one error shape: {"error": {"code", "message", "field"}} with the
// HTTP status that goes with the code (docs/server-api.md, "Conventions").
#pragma once

#include <expected>
#include <string>

#include "common/result.h"

namespace tidal::server {

struct ApiError {
  int status = 500;
  std::string code;     // invalid_argument, unauthenticated, permission_denied, not_found, conflict, ...
  std::string message;  // what, where and what to do
  std::string field;    // the request field at fault, "" if none
};

template <typename T>
using ApiResult = std::expected<T, ApiError>;

inline ApiError BadRequest(std::string message, std::string field = {}) {
  return {400, "invalid_argument", std::move(message), std::move(field)};
}
inline ApiError NotFound(std::string message) { return {404, "not_found", std::move(message), {}}; }
inline ApiError Forbidden(std::string message) { return {403, "permission_denied", std::move(message), {}}; }
inline ApiError Conflict(std::string message, std::string field = {}) {
  return {409, "conflict", std::move(message), std::move(field)};
}
inline ApiError Unauthenticated(std::string message) { return {401, "unauthenticated", std::move(message), {}}; }

// An internal Error as the API reports it (kInvalidArgument -> 400, kNotFound
// -> 404, anything else -> 500 with the message).
ApiError FromError(const Error& e);

// {"error": {...}} as text.
std::string ErrorBody(const ApiError& e);

}  // namespace tidal::server
