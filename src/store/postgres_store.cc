#include "store/postgres_store.h"

#include <charconv>
#include <unordered_map>

#include <fmt/format.h>
#include <pqxx/pqxx>

#include "store/internal.h"
#include "store/schema.h"

namespace tidal::store {
namespace {

using internal::SqlHead;

// Statements are cached (prepared on the server) up to this many distinct SQL
// texts per connection; beyond it, statements run unprepared.
constexpr std::size_t kMaxCachedStatements = 512;

// The advisory lock migrations hold: "tidal" in ASCII, 0x746964616C.
constexpr std::string_view kMigrationLock = "SELECT pg_advisory_xact_lock(499984392556)";

// Type OIDs (pg_type.h) that come back as integers.
constexpr pqxx::oid kBoolOid = 16, kInt8Oid = 20, kInt2Oid = 21, kInt4Oid = 23, kOidOid = 26, kNumericOid = 1700;

bool Retryable(std::string_view sqlstate) { return sqlstate == "40001" || sqlstate == "40P01"; }
// Connection exceptions (08xxx) and the server ending the session (57P01
// admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now).
bool ConnectionLost(std::string_view sqlstate) {
  return sqlstate.starts_with("08") || sqlstate.starts_with("57P");
}

// libpq's messages, "ERROR:  text\nDETAIL:  more\nLINE 1: ...\n   ^\n", to one
// line: "text; DETAIL: more" (the LINE/caret lines point into SQL the message
// already names).
std::string CleanMessage(std::string_view what) {
  std::string out;
  std::size_t pos = 0;
  while (pos <= what.size()) {
    std::size_t end = what.find('\n', pos);
    if (end == std::string_view::npos) end = what.size();
    std::string_view line = what.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
    for (std::string_view prefix : {"ERROR:", "FATAL:"})
      if (line.starts_with(prefix)) line.remove_prefix(prefix.size());
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (line.empty() || line.starts_with("LINE ") || line == "^") continue;
    if (!out.empty()) out += "; ";
    out.append(line);
  }
  // "DETAIL:  x" reads better with one space.
  for (std::size_t p; (p = out.find(":  ")) != std::string::npos;) out.erase(p + 1, 1);
  return out;
}

ErrorCode CodeFor(std::string_view sqlstate) {
  std::string_view cls = sqlstate.substr(0, 2);
  if (cls == "23" || cls == "25" || cls == "40" || cls == "28" || cls == "55") return ErrorCode::kFailedPrecondition;
  if (cls == "42" || cls == "22" || cls == "0A" || cls == "2F" || cls == "P0") return ErrorCode::kInvalidArgument;
  if (cls == "08" || cls == "53" || cls == "57" || cls == "58") return ErrorCode::kIo;
  if (cls == "3D") return ErrorCode::kNotFound;
  return ErrorCode::kInternal;
}

// What a libpqxx exception means. libpqxx 6.4 quirk: serialization_failure and
// deadlock_detected derive from transaction_rollback, not sql_error, and carry
// no SQLSTATE, so they are told apart by type.
struct PgFailure {
  std::string sqlstate;  // "" when not from the server
  std::string message;
  enum class Kind { kSql, kConnection, kInDoubt, kOther } kind = Kind::kOther;
};

PgFailure ClassifyCurrentException() {
  using Kind = PgFailure::Kind;
  try {
    throw;
  } catch (const pqxx::sql_error& e) {
    return {e.sqlstate(), CleanMessage(e.what()), Kind::kSql};
  } catch (const pqxx::serialization_failure& e) {
    return {"40001", CleanMessage(e.what()), Kind::kSql};
  } catch (const pqxx::deadlock_detected& e) {
    return {"40P01", CleanMessage(e.what()), Kind::kSql};
  } catch (const pqxx::statement_completion_unknown& e) {
    return {"40003", CleanMessage(e.what()), Kind::kSql};
  } catch (const pqxx::transaction_rollback& e) {
    return {"40000", CleanMessage(e.what()), Kind::kSql};
  } catch (const pqxx::in_doubt_error& e) {
    return {"", CleanMessage(e.what()), Kind::kInDoubt};
  } catch (const pqxx::broken_connection& e) {
    return {"08006", CleanMessage(e.what()), Kind::kConnection};
  } catch (const std::exception& e) {
    return {"", CleanMessage(e.what()), Kind::kOther};
  } catch (...) {
    return {"", "an unknown exception", Kind::kOther};
  }
}

struct PgStatement {
  std::string name;  // "" when not prepared (cache full)
  std::string sql;   // with $1, $2, ...
  int params = 0;
};

class PgStore;

class PgTx final : public Tx {
 public:
  PgTx(PgStore& store, pqxx::transaction_base& t) : store_(store), t_(t) {}

  Result<std::int64_t> Exec(std::string_view sql, std::span<const Value> params) override;
  Result<Rows> Query(std::string_view sql, std::span<const Value> params) override;

  bool failed() const { return failed_; }
  bool retryable() const { return retryable_; }
  bool lost_connection() const { return lost_connection_; }
  const Error& first_error() const { return first_error_; }

 private:
  Result<pqxx::result> Run(std::string_view sql, std::span<const Value> params);
  std::unexpected<Error> Fail(Error e, std::string_view sqlstate = {}) {
    if (!failed_) first_error_ = e;
    failed_ = true;
    retryable_ = retryable_ || Retryable(sqlstate);
    lost_connection_ = lost_connection_ || ConnectionLost(sqlstate);
    return std::unexpected(std::move(e));
  }

  PgStore& store_;
  pqxx::transaction_base& t_;
  bool failed_ = false;
  bool retryable_ = false;
  bool lost_connection_ = false;
  Error first_error_;
};

class PgStore final : public internal::MigratingStore {
 public:
  PgStore(StoreUrl url, const OpenOptions& options) : url_(std::move(url)), options_(options) {}
  ~PgStore() override {
    try {
      conn_.reset();
    } catch (...) {
    }
  }

  Status Open();

  std::string_view backend() const override { return "postgresql"; }
  std::string display_url() const override { return url_.display; }
  int schema_version() const override { return version_; }
  Status Write(const std::function<Status(Tx&)>& fn) override { return Run(Mode::kWrite, fn); }
  Status Read(const std::function<Status(Tx&)>& fn) override { return Run(Mode::kRead, fn); }
  Status WriteExclusive(const std::function<Status(Tx&)>& fn) override { return Run(Mode::kExclusive, fn); }

 private:
  friend class PgTx;
  enum class Mode { kWrite, kRead, kExclusive };

  Status Run(Mode mode, const std::function<Status(Tx&)>& fn);
  // (Re)connects: a fresh session with tidal's settings and no prepared
  // statements. Done on open and after a connection was lost, rather than
  // relying on libpqxx's own reactivation.
  Status Connect();
  std::unique_ptr<pqxx::transaction_base> Begin(Mode mode) {
    switch (mode) {
      case Mode::kWrite:
        return std::make_unique<pqxx::transaction<pqxx::serializable>>(*conn_);
      case Mode::kRead:
        return std::make_unique<pqxx::transaction<pqxx::repeatable_read, pqxx::read_only>>(*conn_);
      case Mode::kExclusive:
        break;
    }
    return std::make_unique<pqxx::work>(*conn_);
  }
  // The cached statement for sql; past the cache's size, one filled in
  // `scratch` that runs unprepared.
  Result<const PgStatement*> Prepare(std::string_view sql, PgStatement& scratch);

  // The error for a libpqxx exception thrown while running sql.
  Error FailureError(const PgFailure& f, std::string_view sql, std::string_view note = {}) const {
    switch (f.kind) {
      case PgFailure::Kind::kSql:
        return Error{CodeFor(f.sqlstate), fmt::format("store {}: `{}` failed: {} (SQLSTATE {}){}", url_.display,
                                                      SqlHead(sql), f.message, f.sqlstate, note)};
      case PgFailure::Kind::kConnection:
        return Error{ErrorCode::kIo,
                     fmt::format("store {}: `{}` failed: the connection to the server broke: {}; check the server, "
                                 "then retry (the next transaction reconnects)",
                                 url_.display, SqlHead(sql), f.message)};
      case PgFailure::Kind::kInDoubt:
        return Error{ErrorCode::kIo,
                     fmt::format("store {}: the connection broke during `{}`, so the transaction may or may not have "
                                 "been committed ({}); check the store before repeating it",
                                 url_.display, SqlHead(sql), f.message)};
      case PgFailure::Kind::kOther:
        break;
    }
    return Error{ErrorCode::kInternal,
                 fmt::format("store {}: `{}` failed: {}", url_.display, SqlHead(sql), f.message)};
  }

  StoreUrl url_;
  OpenOptions options_;
  std::unique_ptr<pqxx::connection> conn_;
  int version_ = 0;
  std::unordered_map<std::string, PgStatement, internal::StringHash, std::equal_to<>> cache_;
  int next_statement_ = 0;
  bool broken_ = false;  // the connection was lost; reconnect before the next transaction
  internal::TxGate gate_;
};

Result<const PgStatement*> PgStore::Prepare(std::string_view sql, PgStatement& scratch) {
  if (auto it = cache_.find(sql); it != cache_.end()) return &it->second;
  PgStatement st;
  st.sql = RewritePlaceholders(sql, &st.params);
  if (cache_.size() >= kMaxCachedStatements) {
    scratch = std::move(st);
    return &scratch;
  }
  st.name = fmt::format("tidal_{}", next_statement_++);
  try {
    conn_->prepare(st.name, st.sql);  // registered on the server at first use
  } catch (...) {
    return std::unexpected(FailureError(ClassifyCurrentException(), sql));
  }
  return &cache_.emplace(std::string(sql), std::move(st)).first->second;
}

Result<pqxx::result> PgTx::Run(std::string_view sql, std::span<const Value> params) {
  const std::string& url = store_.url_.display;
  if (failed_)
    return MakeError(ErrorCode::kFailedPrecondition,
                     "store {}: `{}` not run: an earlier statement in this transaction failed ({}); the transaction "
                     "will be rolled back",
                     url, SqlHead(sql), first_error_.message);
  PgStatement scratch;
  auto prepared = store_.Prepare(sql, scratch);
  if (!prepared) return Fail(std::move(prepared).error());
  const PgStatement& st = **prepared;
  if (static_cast<std::size_t>(st.params) != params.size())
    return Fail(Error{ErrorCode::kInvalidArgument,
                      fmt::format("store {}: `{}` has {} placeholders but was given {} values", url, SqlHead(sql),
                                  st.params, params.size())});
  // Parameters go as text; the server infers their types from the statement.
  std::vector<std::string> numbers;
  numbers.reserve(params.size());
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const Value& v : params) {
    if (const auto* i = std::get_if<std::int64_t>(&v)) {
      values.push_back(numbers.emplace_back(std::to_string(*i)).c_str());
    } else if (const auto* s = std::get_if<std::string>(&v)) {
      if (s->find('\0') != std::string::npos)
        return Fail(Error{ErrorCode::kInvalidArgument,
                          fmt::format("store {}: `{}`: value {} holds a NUL byte, which PostgreSQL text cannot", url,
                                      SqlHead(sql), values.size() + 1)});
      values.push_back(s->c_str());
    } else {
      values.push_back(nullptr);
    }
  }
  try {
    auto dynamic = pqxx::prepare::make_dynamic_params(values);
    if (st.name.empty()) return t_.exec_params(st.sql, dynamic);
    return t_.exec_prepared(st.name, dynamic);
  } catch (...) {
    const PgFailure f = ClassifyCurrentException();
    return Fail(store_.FailureError(f, sql), f.sqlstate);
  }
}

Result<std::int64_t> PgTx::Exec(std::string_view sql, std::span<const Value> params) {
  TIDAL_ASSIGN_OR_RETURN(pqxx::result r, Run(sql, params));
  return static_cast<std::int64_t>(r.affected_rows());
}

Result<Rows> PgTx::Query(std::string_view sql, std::span<const Value> params) {
  TIDAL_ASSIGN_OR_RETURN(pqxx::result r, Run(sql, params));
  Rows rows;
  const auto ncols = r.columns();
  enum class As { kInt, kBool, kNumeric, kText };
  std::vector<As> as(ncols, As::kText);
  for (pqxx::row::size_type c = 0; c < ncols; ++c) {
    rows.columns.emplace_back(r.column_name(c));
    switch (r.column_type(c)) {
      case kInt2Oid:
      case kInt4Oid:
      case kInt8Oid:
      case kOidOid:
        as[c] = As::kInt;
        break;
      case kBoolOid:
        as[c] = As::kBool;
        break;
      case kNumericOid:
        as[c] = As::kNumeric;
        break;
      default:
        break;
    }
  }
  rows.rows.reserve(r.size());
  for (const pqxx::row& pr : r) {
    Row& row = rows.rows.emplace_back();
    row.reserve(ncols);
    for (pqxx::row::size_type c = 0; c < ncols; ++c) {
      const pqxx::field f = pr[c];
      if (f.is_null()) {
        row.emplace_back(std::monostate{});
        continue;
      }
      std::string_view text(f.c_str(), f.size());
      if (as[c] == As::kBool) {
        row.emplace_back(std::int64_t{text == "t" ? 1 : 0});
        continue;
      }
      if (as[c] == As::kInt || as[c] == As::kNumeric) {
        // numeric: SUM(bigint) and friends; whole values come back as integers
        // as they do from SQLite.
        std::int64_t n = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
        if (ec == std::errc() && end == text.data() + text.size()) {
          row.emplace_back(n);
          continue;
        }
      }
      row.emplace_back(std::string(text));
    }
  }
  return rows;
}

Status PgStore::Run(Mode mode, const std::function<Status(Tx&)>& fn) {
  if (gate_.HeldByThisThread()) return std::unexpected(internal::NestedTransactionError(url_.display));
  internal::TxGate::Held held(gate_);
  const bool retry = mode == Mode::kWrite;
  for (int attempt = 0;; ++attempt) {
    const bool may_retry = attempt < options_.max_retries;
    if (broken_ || !conn_ || !conn_->is_open()) TIDAL_RETURN_IF_ERROR(Connect());
    std::unique_ptr<pqxx::transaction_base> t;
    try {
      t = Begin(mode);
    } catch (...) {
      const PgFailure f = ClassifyCurrentException();
      if (f.kind == PgFailure::Kind::kConnection || ConnectionLost(f.sqlstate)) {
        // The session died while idle (a server restart): fn has not run, so
        // reconnect and begin again.
        broken_ = true;
        if (may_retry) continue;
      }
      return std::unexpected(FailureError(f, "BEGIN"));
    }
    auto abort = [&] {
      try {
        t->abort();
      } catch (...) {
      }
    };
    PgTx tx(*this, *t);
    Status s;
    if (mode == Mode::kExclusive) {
      auto locked = tx.Query(kMigrationLock, {});
      if (!locked) s = std::unexpected(std::move(locked).error());
    }
    try {
      if (s) s = fn(tx);
    } catch (...) {
      abort();
      throw;
    }
    if (tx.lost_connection() || !conn_->is_open()) broken_ = true;
    if (s && !tx.failed()) {
      try {
        t->commit();
        return Ok();
      } catch (...) {
        const PgFailure f = ClassifyCurrentException();
        if (f.kind != PgFailure::Kind::kSql || ConnectionLost(f.sqlstate) || !conn_->is_open()) {
          // Lost during COMMIT: the outcome is unknown, so fn is not re-run.
          broken_ = true;
          PgFailure doubt = f;
          if (doubt.kind == PgFailure::Kind::kConnection) doubt.kind = PgFailure::Kind::kInDoubt;
          return std::unexpected(FailureError(doubt, "COMMIT"));
        }
        if (Retryable(f.sqlstate) && retry && may_retry) {
          internal::Backoff(attempt);
          continue;
        }
        return std::unexpected(
            FailureError(f, "COMMIT", Retryable(f.sqlstate) ? fmt::format(" (after {} retries)", attempt) : ""));
      }
    }
    abort();
    // Nothing was committed: a write that conflicted, or lost its connection
    // before COMMIT, runs again from the start.
    if ((tx.retryable() || broken_) && retry && may_retry) {
      if (!broken_) internal::Backoff(attempt);
      continue;
    }
    if (!s) {
      if (tx.retryable() && retry) s.error().message += fmt::format(" (after {} retries)", attempt);
      return s;
    }
    Error e = tx.first_error();
    e.message += " (fn went on and returned Ok; nothing was committed)";
    return std::unexpected(std::move(e));
  }
}

Status PgStore::Connect() {
  cache_.clear();  // prepared statements belong to the old session
  try {
    conn_.reset();
  } catch (...) {
  }
  try {
    conn_ = std::make_unique<pqxx::connection>(url_.conninfo);
  } catch (...) {
    std::string why = ClassifyCurrentException().message;
    const bool missing = why.find("does not exist") != std::string::npos;
    return MakeError(missing ? ErrorCode::kNotFound : ErrorCode::kIo, "cannot connect to store {}: {}; {}",
                     url_.display, why,
                     missing ? "create the database first (createdb NAME, or CREATE DATABASE in psql)"
                             : "check that the server runs and that the URL's host, port, user and password are right");
  }
  try {
    conn_->set_variable("client_min_messages", "warning");
    // Not durable: a commit returns before its WAL record is flushed; a server
    // crash may lose the last few commits but never corrupts the store.
    if (!options_.durable) conn_->set_variable("synchronous_commit", "off");
  } catch (...) {
    conn_.reset();
    return std::unexpected(FailureError(ClassifyCurrentException(), "SET synchronous_commit"));
  }
  broken_ = false;
  return Ok();
}

Status PgStore::Open() {
  TIDAL_RETURN_IF_ERROR(Connect());
  TIDAL_ASSIGN_OR_RETURN(version_, MigrateStore(*this, Dialect::kPostgres, options_.create));
  return Ok();
}

bool IsIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

std::string RewritePlaceholders(std::string_view sql, int* count) {
  std::string out;
  out.reserve(sql.size() + 8);
  int n = 0;
  std::size_t i = 0;
  auto copy_to = [&](std::size_t end) {
    out.append(sql.substr(i, end - i));
    i = end;
  };
  while (i < sql.size()) {
    const char c = sql[i];
    if (c == '\'' || c == '"') {
      // E'...' strings take backslash escapes; others only doubled quotes.
      const bool escapes = c == '\'' && i > 0 && (sql[i - 1] == 'E' || sql[i - 1] == 'e') &&
                           (i == 1 || !IsIdentChar(sql[i - 2]));
      std::size_t j = i + 1;
      while (j < sql.size()) {
        if (escapes && sql[j] == '\\') {
          j += 2;
          continue;
        }
        if (sql[j] == c) {
          if (j + 1 < sql.size() && sql[j + 1] == c) {
            j += 2;
            continue;
          }
          ++j;
          break;
        }
        ++j;
      }
      copy_to(std::min(j, sql.size()));
    } else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      std::size_t end = sql.find('\n', i);
      copy_to(end == std::string_view::npos ? sql.size() : end);
    } else if (c == '/' && i + 1 < sql.size() && sql[i + 1] == '*') {
      // PostgreSQL block comments nest.
      std::size_t j = i + 2;
      int depth = 1;
      while (j < sql.size() && depth > 0) {
        if (sql[j] == '/' && j + 1 < sql.size() && sql[j + 1] == '*') {
          ++depth;
          j += 2;
        } else if (sql[j] == '*' && j + 1 < sql.size() && sql[j + 1] == '/') {
          --depth;
          j += 2;
        } else {
          ++j;
        }
      }
      copy_to(j);
    } else if (c == '$' && (i == 0 || !IsIdentChar(sql[i - 1]))) {
      std::size_t j = i + 1;
      while (j < sql.size() && IsIdentChar(sql[j]) && !(j == i + 1 && sql[j] >= '0' && sql[j] <= '9')) ++j;
      if (j < sql.size() && sql[j] == '$') {
        std::string_view tag = sql.substr(i, j - i + 1);
        std::size_t end = sql.find(tag, j + 1);
        copy_to(end == std::string_view::npos ? sql.size() : end + tag.size());
      } else {
        copy_to(j);
      }
    } else if (c == '?') {
      out += fmt::format("${}", ++n);
      ++i;
    } else {
      out.push_back(c);
      ++i;
    }
  }
  if (count) *count = n;
  return out;
}

Result<std::unique_ptr<Store>> OpenPostgresStore(const StoreUrl& url, const OpenOptions& options) {
  auto store = std::make_unique<PgStore>(url, options);
  TIDAL_RETURN_IF_ERROR(store->Open());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace tidal::store
