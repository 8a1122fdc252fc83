#include "store/sqlite_store.h"

#include <sqlite3.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <unordered_map>

#include <fmt/format.h>

#include "store/internal.h"
#include "store/schema.h"

namespace tidal::store {
namespace {

namespace fs = std::filesystem;
using internal::SqlHead;

// How long one statement waits for another connection's lock before SQLITE_BUSY
// (and Write's retry loop takes over).
constexpr int kBusyTimeoutMs = 5000;
// The statement cache is dropped when it grows past this many entries (the
// ledger uses a few dozen distinct statements; this only bounds generated SQL).
constexpr std::size_t kMaxCachedStatements = 512;

bool IsBusy(int rc) { return (rc & 0xff) == SQLITE_BUSY; }

ErrorCode CodeFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_NOLFS:
    case SQLITE_PROTOCOL:
      return ErrorCode::kIo;
    case SQLITE_CONSTRAINT:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return ErrorCode::kFailedPrecondition;
    case SQLITE_ERROR:
    case SQLITE_MISMATCH:
    case SQLITE_RANGE:
    case SQLITE_TOOBIG:
      return ErrorCode::kInvalidArgument;
    default:
      return ErrorCode::kInternal;
  }
}

std::string_view AdviceFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "; another connection holds the store's lock: retry later, or find the process that keeps it";
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
      return "; check that the file and its folder are writable by this user";
    case SQLITE_FULL:
      return "; free some disk space";
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return "; the file is damaged or not a tidal store: restore it from a backup";
    case SQLITE_IOERR:
      return "; the disk or file system reported an error";
    default:
      return "";
  }
}

class SqliteStore;

class SqliteTx final : public Tx {
 public:
  SqliteTx(SqliteStore& store, bool read_only) : store_(store), read_only_(read_only) {}

  Result<std::int64_t> Exec(std::string_view sql, std::span<const Value> params) override;
  Result<Rows> Query(std::string_view sql, std::span<const Value> params) override;
  Status QueryEach(std::string_view sql, std::span<const Value> params,
                   const std::function<Status(const Row&)>& fn) override;

  bool failed() const { return failed_; }
  bool busy() const { return busy_; }
  const Error& first_error() const { return first_error_; }

 private:
  // Rows go to `rows`, or one by one to `each` (one Row, reused).
  Status Run(std::string_view sql, std::span<const Value> params, Rows* rows, std::int64_t* changes,
             const std::function<Status(const Row&)>* each = nullptr);
  std::unexpected<Error> Fail(Error e, int rc = SQLITE_OK) {
    if (!failed_) first_error_ = e;
    failed_ = true;
    busy_ = busy_ || IsBusy(rc);
    return std::unexpected(std::move(e));
  }

  SqliteStore& store_;
  bool read_only_;
  bool failed_ = false;
  bool busy_ = false;
  Error first_error_;
};

class SqliteStore final : public internal::MigratingStore {
 public:
  SqliteStore(StoreUrl url, const OpenOptions& options) : url_(std::move(url)), options_(options) {}
  ~SqliteStore() override {
    ClearCache();
    if (db_) sqlite3_close_v2(db_);
  }

  Status Open();

  std::string_view backend() const override { return "sqlite"; }
  std::string display_url() const override { return url_.display; }
  int schema_version() const override { return version_; }
  Status Write(const std::function<Status(Tx&)>& fn) override { return Run(/*write=*/true, fn); }
  Status Read(const std::function<Status(Tx&)>& fn) override { return Run(/*write=*/false, fn); }
  Status WriteExclusive(const std::function<Status(Tx&)>& fn) override { return Run(/*write=*/true, fn); }

 private:
  friend class SqliteTx;

  Status Run(bool write, const std::function<Status(Tx&)>& fn);
  Result<sqlite3_stmt*> Prepare(std::string_view sql);
  // Runs a cached statement without parameters or rows (BEGIN, COMMIT, ...).
  int Simple(std::string_view sql);
  void RollbackIfOpen() {
    if (!sqlite3_get_autocommit(db_)) Simple("ROLLBACK");
  }
  Status Pragma(std::string_view sql);
  void ClearCache() {
    for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
    cache_.clear();
  }
  // The error for rc from a call that just failed on db_ (its message is read
  // now, before anything else touches the connection).
  Error SqlError(int rc, std::string_view sql, std::string_view note = {}) const {
    return Error{CodeFor(rc), fmt::format("store {}: `{}` failed: {}{}{}", url_.display, SqlHead(sql),
                                          db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc), note, AdviceFor(rc))};
  }
  Status CheckFile();

  StoreUrl url_;
  OpenOptions options_;
  sqlite3* db_ = nullptr;
  int version_ = 0;
  std::unordered_map<std::string, sqlite3_stmt*, internal::StringHash, std::equal_to<>> cache_;
  internal::TxGate gate_;
};

// Resets a statement (and drops its bindings) when a call is done with it, so
// that a cached statement never holds a read lock or a parameter's memory.
struct ResetOnExit {
  sqlite3_stmt* stmt;
  ~ResetOnExit() {
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
  }
};

Status SqliteTx::Run(std::string_view sql, std::span<const Value> params, Rows* rows, std::int64_t* changes,
                     const std::function<Status(const Row&)>* each) {
  const std::string& url = store_.url_.display;
  if (failed_)
    return MakeError(ErrorCode::kFailedPrecondition,
                     "store {}: `{}` not run: an earlier statement in this transaction failed ({}); the transaction "
                     "will be rolled back",
                     url, SqlHead(sql), first_error_.message);
  auto prepared = store_.Prepare(sql);
  if (!prepared) return Fail(std::move(prepared).error());
  sqlite3_stmt* stmt = *prepared;
  sqlite3* db = store_.db_;
  if (read_only_ && !sqlite3_stmt_readonly(stmt))
    return Fail(Error{ErrorCode::kFailedPrecondition,
                      fmt::format("store {}: `{}` would change the store inside Read: run it inside Write", url,
                                  SqlHead(sql))});
  const int expected = sqlite3_bind_parameter_count(stmt);
  if (static_cast<std::size_t>(expected) != params.size())
    return Fail(Error{ErrorCode::kInvalidArgument,
                      fmt::format("store {}: `{}` has {} placeholders but was given {} values", url, SqlHead(sql),
                                  expected, params.size())});
  ResetOnExit reset{stmt};
  for (std::size_t i = 0; i < params.size(); ++i) {
    const int index = static_cast<int>(i + 1);
    int rc = SQLITE_OK;
    if (const auto* v = std::get_if<std::int64_t>(&params[i])) {
      rc = sqlite3_bind_int64(stmt, index, *v);
    } else if (const auto* s = std::get_if<std::string>(&params[i])) {
      // SQLITE_STATIC: the value outlives the statement's use (reset on exit).
      rc = sqlite3_bind_text64(stmt, index, s->data(), s->size(), SQLITE_STATIC, SQLITE_UTF8);
    } else {
      rc = sqlite3_bind_null(stmt, index);
    }
    if (rc != SQLITE_OK) return Fail(store_.SqlError(rc, sql, fmt::format(" (binding value {})", index)), rc);
  }

  const std::int64_t before = sqlite3_total_changes64(db);
  const int columns = rows || each ? sqlite3_column_count(stmt) : 0;
  if (rows) {
    rows->columns.clear();
    for (int c = 0; c < columns; ++c) rows->columns.emplace_back(sqlite3_column_name(stmt, c));
  }
  Row reused(static_cast<std::size_t>(columns));
  // Sets a cell, reusing a text cell's buffer when the row is reused.
  auto text = [](Value& v, const char* p, std::size_t n) {
    if (auto* s = std::get_if<std::string>(&v)) s->assign(p, n);
    else v = std::string(p, n);
  };
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    if (!rows && !each) continue;
    Row& row = rows ? rows->rows.emplace_back(static_cast<std::size_t>(columns)) : reused;
    for (int c = 0; c < columns; ++c) {
      Value& v = row[static_cast<std::size_t>(c)];
      switch (sqlite3_column_type(stmt, c)) {
        case SQLITE_INTEGER:
          v = static_cast<std::int64_t>(sqlite3_column_int64(stmt, c));
          break;
        case SQLITE_NULL:
          v = std::monostate{};
          break;
        case SQLITE_BLOB: {
          const void* p = sqlite3_column_blob(stmt, c);
          const int n = sqlite3_column_bytes(stmt, c);
          text(v, static_cast<const char*>(p), static_cast<std::size_t>(n));
          break;
        }
        default: {  // TEXT, and FLOAT as its text
          const unsigned char* p = sqlite3_column_text(stmt, c);
          const int n = sqlite3_column_bytes(stmt, c);
          text(v, p ? reinterpret_cast<const char*>(p) : "", p ? static_cast<std::size_t>(n) : 0);
        }
      }
    }
    // The caller's error is its own: the transaction stays usable.
    if (each) TIDAL_RETURN_IF_ERROR((*each)(row));
  }
  if (rc != SQLITE_DONE) return Fail(store_.SqlError(rc, sql), rc);
  if (sqlite3_get_autocommit(db))
    return Fail(Error{ErrorCode::kFailedPrecondition,
                      fmt::format("store {}: `{}` ended the transaction: Write and Read begin and end "
                                  "transactions themselves; do not run BEGIN, COMMIT or ROLLBACK through a Tx",
                                  url, SqlHead(sql))});
  if (changes) *changes = sqlite3_total_changes64(db) != before ? sqlite3_changes64(db) : 0;
  return Ok();
}

Result<std::int64_t> SqliteTx::Exec(std::string_view sql, std::span<const Value> params) {
  std::int64_t changes = 0;
  TIDAL_RETURN_IF_ERROR(Run(sql, params, nullptr, &changes));
  return changes;
}

Result<Rows> SqliteTx::Query(std::string_view sql, std::span<const Value> params) {
  Rows rows;
  TIDAL_RETURN_IF_ERROR(Run(sql, params, &rows, nullptr));
  return rows;
}

Status SqliteTx::QueryEach(std::string_view sql, std::span<const Value> params,
                           const std::function<Status(const Row&)>& fn) {
  return Run(sql, params, nullptr, nullptr, &fn);
}

Result<sqlite3_stmt*> SqliteStore::Prepare(std::string_view sql) {
  if (auto it = cache_.find(sql); it != cache_.end()) return it->second;
  if (sql.size() > static_cast<std::size_t>(INT_MAX))
    return MakeError(ErrorCode::kInvalidArgument, "store {}: a statement of {} bytes is too long", url_.display,
                     sql.size());
  if (cache_.size() >= kMaxCachedStatements) ClearCache();
  sqlite3_stmt* stmt = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt, &tail);
  if (rc != SQLITE_OK) return std::unexpected(SqlError(rc, sql));
  if (!stmt)
    return MakeError(ErrorCode::kInvalidArgument, "store {}: the statement `{}` is empty", url_.display,
                     SqlHead(sql));
  // Only whitespace and comments may follow the statement.
  const char* end = sql.data() + sql.size();
  if (tail && tail < end) {
    sqlite3_stmt* next = nullptr;
    rc = sqlite3_prepare_v2(db_, tail, static_cast<int>(end - tail), &next, nullptr);
    const bool more = rc != SQLITE_OK || next != nullptr;
    sqlite3_finalize(next);
    if (more) {
      sqlite3_finalize(stmt);
      return MakeError(ErrorCode::kInvalidArgument,
                       "store {}: `{}` holds more than one statement: Exec and Query run one statement per call",
                       url_.display, SqlHead(sql));
    }
  }
  cache_.emplace(std::string(sql), stmt);
  return stmt;
}

int SqliteStore::Simple(std::string_view sql) {
  auto stmt = Prepare(sql);
  if (!stmt) return sqlite3_errcode(db_) == SQLITE_OK ? SQLITE_ERROR : sqlite3_errcode(db_);
  ResetOnExit reset{*stmt};
  int rc = sqlite3_step(*stmt);
  return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

Status SqliteStore::Run(bool write, const std::function<Status(Tx&)>& fn) {
  if (gate_.HeldByThisThread()) return std::unexpected(internal::NestedTransactionError(url_.display));
  internal::TxGate::Held held(gate_);
  const std::string_view begin = write ? "BEGIN IMMEDIATE" : "BEGIN";
  for (int attempt = 0;; ++attempt) {
    const bool may_retry = attempt < options_.max_retries;
    int rc = Simple(begin);
    if (rc != SQLITE_OK) {
      if (IsBusy(rc) && may_retry) {
        internal::Backoff(attempt);
        continue;
      }
      return std::unexpected(
          SqlError(rc, begin, IsBusy(rc) ? fmt::format(" (after {} retries)", attempt) : std::string()));
    }
    SqliteTx tx(*this, /*read_only=*/!write);
    Status s;
    try {
      s = fn(tx);
    } catch (...) {
      RollbackIfOpen();
      throw;
    }
    if (s && !tx.failed()) {
      rc = Simple("COMMIT");
      if (rc == SQLITE_OK) return Ok();
      Error e = SqlError(rc, "COMMIT");
      RollbackIfOpen();
      if (IsBusy(rc) && write && may_retry) {
        internal::Backoff(attempt);
        continue;
      }
      return std::unexpected(std::move(e));
    }
    RollbackIfOpen();
    if (tx.busy() && write && may_retry) {
      internal::Backoff(attempt);
      continue;
    }
    if (!s) return s;
    Error e = tx.first_error();
    e.message += " (fn went on and returned Ok; nothing was committed)";
    return std::unexpected(std::move(e));
  }
}

Status SqliteStore::Pragma(std::string_view sql) {
  const std::string text(sql);
  for (int attempt = 0;; ++attempt) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
    if (err) sqlite3_free(err);
    if (rc == SQLITE_OK) return Ok();
    if (IsBusy(rc) && attempt < options_.max_retries) {
      internal::Backoff(attempt);
      continue;
    }
    return std::unexpected(SqlError(rc, sql));
  }
}

// Before SQLite touches the file: it must be missing (and then creatable), empty,
// or start with the SQLite header. Nothing is written to a file that fails.
Status SqliteStore::CheckFile() {
  const fs::path path(url_.path);
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  // ENOTDIR: a part of the path is a file; creating the folder says so below.
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    return MakeError(ErrorCode::kIo, "store {}: cannot look at {}: {}; check the path and its permissions",
                     url_.display, url_.path, ec.message());
  if (fs::is_directory(st))
    return MakeError(ErrorCode::kInvalidArgument,
                     "store {}: {} is a folder; the URL names the database file, e.g. sqlite:{}/tidal.db",
                     url_.display, url_.path, url_.path);
  if (!fs::exists(st)) {
    if (!options_.create)
      return MakeError(ErrorCode::kNotFound,
                       "store {} does not exist: check the path, or open it with create set to make a new one",
                       url_.display);
    const fs::path parent = path.parent_path();
    if (!parent.empty()) {
      fs::create_directories(parent, ec);
      if (ec)
        return MakeError(ErrorCode::kIo, "store {}: cannot create the folder {}: {}; choose a writable location",
                         url_.display, parent.string(), ec.message());
    }
    return Ok();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return MakeError(ErrorCode::kIo, "store {}: cannot read {}: {}; check its permissions", url_.display, url_.path,
                     std::strerror(errno));
  char header[16] = {};
  in.read(header, sizeof header);
  const std::streamsize n = in.gcount();
  if (n == 0) return Ok();  // an empty file is an empty database to SQLite
  if (n < static_cast<std::streamsize>(sizeof header) || std::memcmp(header, "SQLite format 3", 16) != 0)
    return MakeError(ErrorCode::kFailedPrecondition,
                     "{} is not a tidal store: {} is not an SQLite database (it does not start with the SQLite "
                     "header); nothing was changed; point the URL at a tidal store or a new file",
                     url_.display, url_.path);
  return Ok();
}

Status SqliteStore::Open() {
  const bool memory = url_.path == ":memory:";
  if (!memory) TIDAL_RETURN_IF_ERROR(CheckFile());
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
  if (options_.create) flags |= SQLITE_OPEN_CREATE;
  int rc = sqlite3_open_v2(url_.path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    Error e = SqlError(rc, "open");
    sqlite3_close_v2(db_);
    db_ = nullptr;
    return std::unexpected(std::move(e));
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  TIDAL_RETURN_IF_ERROR(Pragma("PRAGMA foreign_keys = ON"));

  // Look before changing anything: a foreign database or a newer tidal store is
  // left exactly as it was (switching to WAL would already rewrite its header).
  TIDAL_RETURN_IF_ERROR(Read([&](Tx& tx) -> Status {
    TIDAL_ASSIGN_OR_RETURN(StoreState state, InspectStore(tx, Dialect::kSqlite, url_.display));
    return CheckStoreState(state, url_.display, options_.create);
  }));

  if (!memory) {
    // WAL: readers do not block the writer nor it them, and a commit is one
    // append (plus one fsync with synchronous=FULL).
    char* err = nullptr;
    std::string mode;
    for (int attempt = 0;; ++attempt) {
      mode.clear();
      rc = sqlite3_exec(
          db_, "PRAGMA journal_mode = WAL",
          [](void* out, int, char** values, char**) {
            if (values[0]) *static_cast<std::string*>(out) = values[0];
            return 0;
          },
          &mode, &err);
      if (err) sqlite3_free(err);
      err = nullptr;
      if (!(IsBusy(rc) && attempt < options_.max_retries)) break;
      internal::Backoff(attempt);
    }
    if (rc != SQLITE_OK) return std::unexpected(SqlError(rc, "PRAGMA journal_mode = WAL"));
    if (mode != "wal")
      return MakeError(ErrorCode::kIo,
                       "store {}: the file system would not let SQLite use WAL mode (journal mode stays '{}'); put "
                       "the store on a local file system",
                       url_.display, mode);
  }
  // In WAL mode FULL syncs the log on every commit (durable across power loss);
  // NORMAL syncs only at checkpoints (durable across a crash of tidal, not of
  // the machine) and is much faster.
  TIDAL_RETURN_IF_ERROR(Pragma(options_.durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL"));
  TIDAL_ASSIGN_OR_RETURN(version_, MigrateStore(*this, Dialect::kSqlite, options_.create));
  return Ok();
}

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const StoreUrl& url, const OpenOptions& options) {
  auto store = std::make_unique<SqliteStore>(url, options);
  TIDAL_RETURN_IF_ERROR(store->Open());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace tidal::store
