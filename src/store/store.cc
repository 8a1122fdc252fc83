#include "store/store.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>

#include "store/internal.h"
#include "store/postgres_store.h"
#include "store/sqlite_store.h"
#include "store/url.h"

namespace tidal::store {
namespace {

const char* KindName(const Value& v) {
  switch (v.index()) {
    case 0:
      return "NULL";
    case 1:
      return "an integer";
    default:
      return "text";
  }
}

std::string Shown(const Value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* s = std::get_if<std::string>(&v))
    return s->size() <= 40 ? fmt::format("'{}'", *s) : fmt::format("'{}...'", s->substr(0, 40));
  return "NULL";
}

}  // namespace

Status Tx::QueryEach(std::string_view sql, std::span<const Value> params,
                     const std::function<Status(const Row&)>& fn) {
  TIDAL_ASSIGN_OR_RETURN(Rows rows, Query(sql, params));
  for (const Row& row : rows.rows) TIDAL_RETURN_IF_ERROR(fn(row));
  return Ok();
}

Result<std::int64_t> AsInt(const Row& row, std::size_t column) {
  if (column >= row.size())
    return MakeError(ErrorCode::kInvalidArgument, "column {} asked of a row with {} columns", column, row.size());
  if (const auto* i = std::get_if<std::int64_t>(&row[column])) return *i;
  return MakeError(ErrorCode::kInvalidArgument, "column {} is {} ({}), not an integer", column,
                   KindName(row[column]), Shown(row[column]));
}

Result<std::string> AsText(const Row& row, std::size_t column) {
  if (column >= row.size())
    return MakeError(ErrorCode::kInvalidArgument, "column {} asked of a row with {} columns", column, row.size());
  if (const auto* s = std::get_if<std::string>(&row[column])) return *s;
  return MakeError(ErrorCode::kInvalidArgument, "column {} is {} ({}), not text", column, KindName(row[column]),
                   Shown(row[column]));
}

bool IsNull(const Row& row, std::size_t column) {
  return column >= row.size() || std::holds_alternative<std::monostate>(row[column]);
}

std::string DefaultStoreUrl() {
  // XDG: a relative XDG_DATA_HOME is to be ignored.
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg && xdg[0] == '/') return fmt::format("sqlite:{}/tidal/tidal.db", xdg);
  std::string home;
  if (const char* h = std::getenv("HOME"); h && h[0] != '\0') {
    home = h;
  } else if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) {
    home = pw->pw_dir;
  }
  if (home.empty()) return "sqlite:tidal.db";
  return fmt::format("sqlite:{}/.local/share/tidal/tidal.db", home);
}

Result<std::unique_ptr<Store>> OpenStore(std::string_view url, const OpenOptions& options) {
  TIDAL_ASSIGN_OR_RETURN(StoreUrl parsed, ParseStoreUrl(url));
  if (options.max_retries < 0)
    return MakeError(ErrorCode::kInvalidArgument, "opening store {}: max_retries is {}; it must be 0 or more",
                     parsed.display, options.max_retries);
  if (parsed.kind == StoreUrl::Kind::kSqlite) return OpenSqliteStore(parsed, options);
  return OpenPostgresStore(parsed, options);
}

namespace internal {

std::string SqlHead(std::string_view sql) {
  constexpr std::size_t kMax = 60;
  std::string out;
  bool space = false;
  for (char c : sql) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
    if (out.size() >= kMax) {
      out += "...";
      break;
    }
  }
  return out;
}

void Backoff(int attempt) {
  thread_local std::minstd_rand rng(std::random_device{}());
  const int base_us = 1000 << std::min(attempt, 7);  // 1 ms .. 128 ms
  const int capped = std::min(base_us, 100'000);
  std::uniform_int_distribution<int> jitter(capped / 2, capped + capped / 2);
  std::this_thread::sleep_for(std::chrono::microseconds(jitter(rng)));
}

Error NestedTransactionError(std::string_view display_url) {
  return Error{ErrorCode::kFailedPrecondition,
               fmt::format("store {}: Write or Read called from inside another Write or Read on the same Store: run "
                           "the statements through the Tx you already hold",
                           display_url)};
}

}  // namespace internal
}  // namespace tidal::store
