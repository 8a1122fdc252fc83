#include "store/url.h"

#include <libpq-fe.h>

#include <memory>

#include "common/strings.h"

namespace tidal::store {
namespace {

constexpr std::string_view kForms =
    "use sqlite:PATH (e.g. sqlite:/var/lib/tidal/tidal.db), sqlite::memory: or "
    "postgresql://USER@HOST/DB";

bool IsSchemeChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '-' ||
         c == '.';
}

// Replaces the value of each NAME=VALUE query parameter whose NAME is a
// password with "***".
void RedactQuery(std::string& url, std::size_t query_start) {
  std::size_t pos = query_start;
  while (pos < url.size()) {
    std::size_t end = url.find('&', pos);
    if (end == std::string::npos) end = url.size();
    std::size_t eq = url.find('=', pos);
    if (eq != std::string::npos && eq < end) {
      std::string key = AsciiLower(std::string_view(url).substr(pos, eq - pos));
      if (key == "password" || key == "sslpassword") {
        url.replace(eq + 1, end - eq - 1, "***");
        end = eq + 1 + 3;
      }
    }
    pos = end + 1;
  }
}

}  // namespace

std::string RedactUrl(std::string_view url) {
  std::string out(url);
  std::size_t sep = out.find("://");
  std::size_t authority = sep == std::string::npos ? std::string::npos : sep + 3;
  if (authority != std::string::npos) {
    // As libpq reads it: user[:password]@ ends at the first '@' before any '/'.
    std::size_t p = authority;
    while (p < out.size() && out[p] != '@' && out[p] != '/') ++p;
    if (p < out.size() && out[p] == '@') {
      std::size_t colon = out.find(':', authority);
      if (colon != std::string::npos && colon < p) out.replace(colon + 1, p - colon - 1, "***");
    }
  }
  std::size_t q = out.find('?', authority == std::string::npos ? 0 : authority);
  if (q != std::string::npos) RedactQuery(out, q + 1);
  return out;
}

Result<StoreUrl> ParseStoreUrl(std::string_view url) {
  if (url.empty()) return MakeError(ErrorCode::kInvalidArgument, "the store URL is empty: {}", kForms);
  const std::string display = RedactUrl(url);
  if (url.find('\0') != std::string_view::npos)
    return MakeError(ErrorCode::kInvalidArgument, "store URL '{}' contains a NUL byte: {}", display, kForms);
  std::size_t colon = url.find(':');
  bool scheme_ok = colon != std::string_view::npos && colon > 0;
  for (std::size_t i = 0; scheme_ok && i < colon; ++i) scheme_ok = IsSchemeChar(url[i]);
  if (!scheme_ok)
    return MakeError(ErrorCode::kInvalidArgument,
                     "store URL '{}' has no scheme: write sqlite:{} for an SQLite file, or postgresql://... for a "
                     "PostgreSQL server",
                     display, display);
  const std::string scheme = AsciiLower(url.substr(0, colon));
  std::string_view rest = url.substr(colon + 1);

  StoreUrl out;
  out.display = display;
  if (scheme == "sqlite") {
    out.kind = StoreUrl::Kind::kSqlite;
    if (rest.starts_with("//")) rest.remove_prefix(2);
    if (rest.empty())
      return MakeError(ErrorCode::kInvalidArgument,
                       "store URL '{}' has no path: write sqlite:PATH (e.g. sqlite:/var/lib/tidal/tidal.db) or "
                       "sqlite::memory:",
                       display);
    if (rest.find('?') != std::string_view::npos)
      return MakeError(ErrorCode::kInvalidArgument,
                       "store URL '{}' has a '?': sqlite: URLs take no options (durability is an OpenOptions "
                       "setting); remove everything from the '?' on",
                       display);
    out.path = std::string(rest);
    return out;
  }
  if (scheme == "postgresql" || scheme == "postgres") {
    out.kind = StoreUrl::Kind::kPostgres;
    if (!rest.starts_with("//"))
      return MakeError(ErrorCode::kInvalidArgument,
                       "store URL '{}' is not a PostgreSQL URI: write postgresql://USER@HOST:PORT/DB or "
                       "postgresql:///DB?host=/SOCKET/DIR",
                       display);
    // libpq only knows the lower-case scheme.
    out.conninfo = scheme + ":" + std::string(rest);
    char* err = nullptr;
    std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> opts(PQconninfoParse(out.conninfo.c_str(), &err),
                                                                       &PQconninfoFree);
    if (!opts) {
      std::string why = err ? err : "out of memory";
      if (err) PQfreemem(err);
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      // libpq quotes the whole URI in some messages; never echo a password.
      why = RedactUrl(why);
      return MakeError(ErrorCode::kInvalidArgument,
                       "cannot parse PostgreSQL URL '{}': {}; see "
                       "https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS",
                       display, why);
    }
    return out;
  }
  return MakeError(ErrorCode::kInvalidArgument, "unknown store URL scheme '{}' in '{}': {}", scheme, display, kForms);
}

}  // namespace tidal::store
