#include "store/schema.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tidal::store {
namespace {

// ============================================================================
// MIGRATIONS — the one place the schema is defined.
//
// Append new migrations at the end with the next version number; never edit
// one that has been released (a store that already applied it will not apply
// it again). SQL here must run on both SQLite and PostgreSQL: BIGINT and TEXT
// columns, no AUTOINCREMENT/SERIAL, no backend-specific functions. Put the
// rare difference in sqlite_sql / postgres_sql.
// ============================================================================

// Migration 1: the market's ledger (src/market/ledger.*). Accounts with their
// running balances, the append-only transfer log (seq is the ledger's own
// sequence number) and the holds (pending transfers) still open or settled.
constexpr std::string_view kMigration1Ledger = R"sql(
CREATE TABLE ledger_accounts (
  name TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  flags BIGINT NOT NULL,
  debits_pending BIGINT NOT NULL,
  debits_posted BIGINT NOT NULL,
  credits_pending BIGINT NOT NULL,
  credits_posted BIGINT NOT NULL,
  created_seq BIGINT NOT NULL);
CREATE TABLE ledger_transfers (
  seq BIGINT PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  debit TEXT NOT NULL,
  credit TEXT NOT NULL,
  amount BIGINT NOT NULL,
  flags BIGINT NOT NULL,
  pending_id TEXT NOT NULL,
  timeout_s BIGINT NOT NULL,
  code TEXT NOT NULL,
  reference TEXT NOT NULL,
  reason TEXT NOT NULL,
  at_us BIGINT NOT NULL,
  result TEXT NOT NULL);
CREATE INDEX ledger_transfers_debit ON ledger_transfers(debit, seq);
CREATE INDEX ledger_transfers_credit ON ledger_transfers(credit, seq);
CREATE TABLE ledger_holds (
  id TEXT PRIMARY KEY,
  debit TEXT NOT NULL,
  credit TEXT NOT NULL,
  amount BIGINT NOT NULL,
  remaining BIGINT NOT NULL,
  state TEXT NOT NULL,
  expires_us BIGINT NOT NULL);
CREATE INDEX ledger_holds_open ON ledger_holds(state, expires_us);
)sql";

// Migration 2: the daemon (src/server, docs/server.md). Jobs as the API
// accepted them and as the scheduler moved them (arrived_at and cancel_at
// are the scheduler's inputs: a restart replays them), API tokens (only
// SHA-256 hashes of their secrets), the audit log of every state-changing
// call, and the daemon's own settings (its clock, its config's digest).
constexpr std::string_view kMigration2Daemon = R"sql(
CREATE TABLE jobs (
  id BIGINT PRIMARY KEY,
  tenant TEXT NOT NULL,
  name TEXT NOT NULL,
  source TEXT NOT NULL,
  spec TEXT NOT NULL,
  spec_hash TEXT NOT NULL,
  idempotency_key TEXT,
  submitted_at BIGINT NOT NULL,
  submitted_by TEXT NOT NULL,
  arrived_at BIGINT,
  cancel_requested BIGINT NOT NULL,
  cancel_at BIGINT,
  state TEXT NOT NULL,
  started_at BIGINT,
  ended_at BIGINT,
  placement TEXT NOT NULL,
  preemptions BIGINT NOT NULL,
  reason TEXT NOT NULL);
CREATE UNIQUE INDEX jobs_idempotency ON jobs(tenant, idempotency_key);
CREATE INDEX jobs_tenant ON jobs(tenant, id);
CREATE INDEX jobs_state ON jobs(state, id);
CREATE INDEX jobs_arrived ON jobs(arrived_at, id);
CREATE TABLE api_tokens (
  id TEXT PRIMARY KEY,
  hash TEXT NOT NULL UNIQUE,
  role TEXT NOT NULL,
  tenant TEXT NOT NULL,
  name TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  created_by TEXT NOT NULL,
  revoked_at BIGINT);
CREATE TABLE audit_log (
  seq BIGINT PRIMARY KEY,
  at BIGINT NOT NULL,
  token TEXT NOT NULL,
  role TEXT NOT NULL,
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  status BIGINT NOT NULL,
  object TEXT NOT NULL);
CREATE TABLE daemon_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
)sql";

// Migration 3: the daemon's operator inputs besides jobs — node drains and
// resumes, quota changes — each with the batch time it took effect at (`at`),
// replayed in id order within a batch on restart (docs/server.md). `body` is
// the canonical JSON of the change.
constexpr std::string_view kMigration3DaemonInputs = R"sql(
CREATE TABLE daemon_inputs (
  id BIGINT PRIMARY KEY,
  at BIGINT NOT NULL,
  kind TEXT NOT NULL,
  body TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  created_by TEXT NOT NULL);
CREATE INDEX daemon_inputs_at ON daemon_inputs(at, id);
)sql";

constexpr Migration kMigrations[] = {
    {.version = 1, .name = "ledger", .sql = kMigration1Ledger},
    {.version = 2, .name = "daemon", .sql = kMigration2Daemon},
    {.version = 3, .name = "daemon-inputs", .sql = kMigration3DaemonInputs},
};

// ============================================================================

constexpr std::string_view kCreateMeta = "CREATE TABLE tidal_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)";

bool IsIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The tables (and views) a database holds in the schema tidal uses.
std::string_view ListTablesSql(Dialect dialect) {
  if (dialect == Dialect::kSqlite)
    return "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE "
           "'\\' ORDER BY name";
  return "SELECT c.relname::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = "
         "c.relnamespace WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY 1";
}

}  // namespace

std::string_view Migration::SqlFor(Dialect dialect) const {
  if (dialect == Dialect::kSqlite && !sqlite_sql.empty()) return sqlite_sql;
  if (dialect == Dialect::kPostgres && !postgres_sql.empty()) return postgres_sql;
  return sql;
}

std::span<const Migration> Migrations() { return kMigrations; }

int LatestSchemaVersion() { return kMigrations[std::size(kMigrations) - 1].version; }

std::vector<std::string> SplitSqlStatements(std::string_view sql) {
  std::vector<std::string> out;
  std::string current;
  bool has_code = false;  // anything but whitespace and comments so far
  auto flush = [&] {
    if (has_code) {
      std::size_t b = current.find_first_not_of(" \t\r\n");
      std::size_t e = current.find_last_not_of(" \t\r\n");
      out.push_back(current.substr(b, e - b + 1));
    }
    current.clear();
    has_code = false;
  };
  std::size_t i = 0;
  while (i < sql.size()) {
    char c = sql[i];
    std::size_t start = i;
    if (c == '\'' || c == '"') {
      // A quoted literal or identifier; a doubled quote stays inside.
      ++i;
      while (i < sql.size()) {
        if (sql[i] == c) {
          if (i + 1 < sql.size() && sql[i + 1] == c) {
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        ++i;
      }
      has_code = true;
    } else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      while (i < sql.size() && sql[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < sql.size() && sql[i + 1] == '*') {
      std::size_t end = sql.find("*/", i + 2);
      i = end == std::string_view::npos ? sql.size() : end + 2;
    } else if (c == '$' && (i == 0 || !IsIdentChar(sql[i - 1]))) {
      // A PostgreSQL dollar quote $tag$...$tag$ (not a $1 parameter).
      std::size_t j = i + 1;
      while (j < sql.size() && IsIdentChar(sql[j]) && !(j == i + 1 && sql[j] >= '0' && sql[j] <= '9')) ++j;
      if (j < sql.size() && sql[j] == '$') {
        std::string_view tag = sql.substr(i, j - i + 1);
        std::size_t end = sql.find(tag, j + 1);
        i = end == std::string_view::npos ? sql.size() : end + tag.size();
      } else {
        i = j;
      }
      has_code = true;
    } else if (c == ';') {
      flush();
      ++i;
      continue;
    } else {
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n') has_code = true;
      ++i;
    }
    current.append(sql.substr(start, i - start));
  }
  flush();
  return out;
}

Result<StoreState> InspectStore(Tx& tx, Dialect dialect, std::string_view display_url) {
  StoreState state;
  TIDAL_ASSIGN_OR_RETURN(Rows tables, tx.Query(ListTablesSql(dialect)));
  for (const Row& row : tables.rows) {
    TIDAL_ASSIGN_OR_RETURN(std::string name, AsText(row, 0));
    if (name == "tidal_meta") state.has_meta = true;
    state.tables.push_back(std::move(name));
  }
  std::sort(state.tables.begin(), state.tables.end());
  if (!state.has_meta) return state;

  TIDAL_ASSIGN_OR_RETURN(Rows meta,
                         tx.Query("SELECT key, value FROM tidal_meta WHERE key IN ('app', 'schema_version')"));
  bool has_version = false;
  for (const Row& row : meta.rows) {
    TIDAL_ASSIGN_OR_RETURN(std::string key, AsText(row, 0));
    TIDAL_ASSIGN_OR_RETURN(std::string value, AsText(row, 1));
    if (key == "app") {
      state.app = value;
    } else {
      has_version = true;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), state.version);
      if (ec != std::errc() || end != value.data() + value.size() || state.version < 0)
        return MakeError(ErrorCode::kFailedPrecondition,
                         "store {} has a malformed schema_version '{}' in tidal_meta: it should be a whole number; "
                         "restore the store from a backup",
                         display_url, value);
    }
  }
  if (state.app == "tidal" && !has_version)
    return MakeError(ErrorCode::kFailedPrecondition,
                     "store {} has no schema_version in tidal_meta: restore the store from a backup", display_url);
  return state;
}

Status CheckStoreState(const StoreState& state, std::string_view display_url, bool create) {
  if (!state.has_meta || state.app != "tidal") {
    if (state.tables.empty()) {
      if (create) return Ok();
      return MakeError(ErrorCode::kNotFound,
                       "store {} holds no tidal store yet: open it with create set to make one, or check the URL",
                       display_url);
    }
    std::string app_note;
    if (state.has_meta)
      app_note = state.app.empty() ? "; its tidal_meta names no app" : fmt::format("; its tidal_meta says app='{}'", state.app);
    return MakeError(ErrorCode::kFailedPrecondition,
                     "{} is not a tidal store (found tables: {}){}: nothing was changed; point the URL at a tidal "
                     "store or an empty database",
                     display_url, fmt::join(state.tables, ", "), app_note);
  }
  if (state.version > LatestSchemaVersion())
    return MakeError(ErrorCode::kFailedPrecondition,
                     "store {} has schema version {}, newer than this tidal ({}): upgrade tidal", display_url,
                     state.version, LatestSchemaVersion());
  return Ok();
}

Result<int> MigrateStore(internal::MigratingStore& store, Dialect dialect, bool create) {
  const std::string url = store.display_url();
  for (;;) {
    bool done = false;
    int version = 0;
    Status s = store.WriteExclusive([&](Tx& tx) -> Status {
      TIDAL_ASSIGN_OR_RETURN(StoreState state, InspectStore(tx, dialect, url));
      TIDAL_RETURN_IF_ERROR(CheckStoreState(state, url, create));
      version = state.version;
      if (version == LatestSchemaVersion()) {
        done = true;
        return Ok();
      }
      if (!state.has_meta) {
        TIDAL_RETURN_IF_ERROR(tx.Exec(kCreateMeta));
        TIDAL_RETURN_IF_ERROR(
            tx.Exec("INSERT INTO tidal_meta (key, value) VALUES ('app', 'tidal'), ('schema_version', '0')"));
      }
      const Migration& m = kMigrations[version];  // versions are 1, 2, ...: the next one
      for (const std::string& stmt : SplitSqlStatements(m.SqlFor(dialect))) {
        auto r = tx.Exec(stmt);
        if (!r)
          return MakeError(r.error().code, "store {}: migration {} ({}) failed, the store stays at version {}: {}",
                           url, m.version, m.name, version, r.error().message);
      }
      std::string next = std::to_string(m.version);
      const Value params[] = {next};
      TIDAL_ASSIGN_OR_RETURN(std::int64_t changed,
                             tx.Exec("UPDATE tidal_meta SET value = ? WHERE key = 'schema_version'", params));
      if (changed != 1)
        return MakeError(ErrorCode::kInternal, "store {}: recording schema version {} changed {} rows, not 1", url,
                         m.version, changed);
      version = m.version;
      return Ok();
    });
    if (!s) return std::unexpected(std::move(s).error());
    if (done) return version;
  }
}

}  // namespace tidal::store
