// The body of the URL-parser fuzz target, shared with a unit test that runs
// it over a corpus of tricky strings (so it runs under g++ in CI too).
// Checks: parsing never crashes, an accepted URL is well-formed, and the
// redacted form is stable (redacting twice changes nothing).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "store/url.h"

namespace tidal::store {

inline void FuzzCheck(bool ok, const char* what, std::string_view input) {
  if (ok) return;
  std::fprintf(stderr, "store URL fuzz: %s fails for input of %zu bytes: '%.*s'\n", what, input.size(),
               static_cast<int>(input.size()), input.data());
  std::abort();
}

inline void FuzzStoreUrl(std::string_view input) {
  const std::string redacted = RedactUrl(input);
  FuzzCheck(RedactUrl(redacted) == redacted, "RedactUrl(RedactUrl(x)) == RedactUrl(x)", input);
  auto parsed = ParseStoreUrl(input);
  if (!parsed) {
    FuzzCheck(parsed.error().code == ErrorCode::kInvalidArgument, "errors are kInvalidArgument", input);
    FuzzCheck(!parsed.error().message.empty(), "errors have a message", input);
    return;
  }
  FuzzCheck(parsed->display == redacted, "display == RedactUrl(input)", input);
  if (parsed->kind == StoreUrl::Kind::kSqlite) {
    FuzzCheck(!parsed->path.empty(), "an SQLite URL has a path", input);
    FuzzCheck(parsed->path.find('?') == std::string::npos, "an SQLite path has no '?'", input);
    FuzzCheck(parsed->path.find('\0') == std::string::npos, "an SQLite path has no NUL", input);
  } else {
    const std::string_view c = parsed->conninfo;
    FuzzCheck(c.starts_with("postgresql://") || c.starts_with("postgres://"), "a PostgreSQL URL is a URI", input);
  }
}

}  // namespace tidal::store
