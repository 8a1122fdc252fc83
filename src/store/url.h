// Store URLs: which backend, where, and how to show the URL in messages
// without its password. Parsing does no I/O (the PostgreSQL form is checked
// with libpq's own conninfo parser, which does not connect), so it is cheap to
// fuzz.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace tidal::store {

struct StoreUrl {
  enum class Kind { kSqlite, kPostgres };
  Kind kind = Kind::kSqlite;
  // SQLite: the file path, or ":memory:".
  std::string path;
  // PostgreSQL: the URI exactly as given, for libpq.
  std::string conninfo;
  // The URL with any password replaced by "***".
  std::string display;
};

// Accepts sqlite:PATH, sqlite://PATH (so sqlite:///abs/path is /abs/path),
// sqlite::memory:, postgresql://... and postgres://... (libpq URIs; the scheme
// is case-insensitive). Errors are kInvalidArgument and name the (redacted)
// URL and the forms that work.
Result<StoreUrl> ParseStoreUrl(std::string_view url);

// The URL with the password of a user:password@ part and any password=...
// query parameter replaced by "***"; anything else is kept as is.
std::string RedactUrl(std::string_view url);

}  // namespace tidal::store
