// The store: tidal's one persistence layer, behind one small interface with two
// real backends — SQLite (default, embedded, WAL) and PostgreSQL (libpqxx).
// Every module that persists state (the market's ledger now; jobs, tenants and
// tokens for the daemon later) writes SQL through a Tx inside Store::Write, so
// one transaction covers everything one logical operation changes.
//
// SQL is written once, with '?' placeholders and portable types (BIGINT, TEXT);
// the PostgreSQL backend rewrites '?' to $1, $2, ... . The schema is owned here
// (schema.cc): numbered migrations applied in order on open, recorded in the
// table tidal_meta.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"

namespace tidal::store {

// A column value: SQL NULL, an integer (BIGINT) or text. Query results map
// the same way on both backends: SQLite INTEGER, and PostgreSQL int2/int4/int8,
// bool (0/1) and whole numeric values (SUM(bigint) is numeric there) come back
// as int64; NULL as monostate; everything else as its text.
using Value = std::variant<std::monostate, std::int64_t, std::string>;
using Row = std::vector<Value>;

struct Rows {
  std::vector<std::string> columns;
  std::vector<Row> rows;
};

// Typed access to a Row cell; an error names the column when the type differs.
Result<std::int64_t> AsInt(const Row& row, std::size_t column);
Result<std::string> AsText(const Row& row, std::size_t column);
bool IsNull(const Row& row, std::size_t column);

// One open transaction, valid only inside the fn it was passed to.
// Statements run in order, one statement per call, with '?' placeholders (a
// '?' inside a quoted literal is text). A failed statement aborts the whole
// transaction on both backends (PostgreSQL does so; SQLite is made to match):
// later statements fail at once, and Write/Read return the first error even
// when fn returns Ok. So detect duplicates with INSERT ... ON CONFLICT DO
// NOTHING and the changed count, not by catching a constraint error.
class Tx {
 public:
  virtual ~Tx() = default;
  // Runs one statement (INSERT/UPDATE/DELETE/DDL); returns the number of rows
  // it changed (0 for DDL).
  virtual Result<std::int64_t> Exec(std::string_view sql, std::span<const Value> params = {}) = 0;
  // Runs one statement and returns its rows (SELECT, or ... RETURNING).
  virtual Result<Rows> Query(std::string_view sql, std::span<const Value> params = {}) = 0;
  // The same rows, passed to fn one by one as they are read (a backend may
  // reuse one Row for all: copy what must outlive the call); stops at fn's
  // first error and returns it. By default, Query's rows.
  virtual Status QueryEach(std::string_view sql, std::span<const Value> params,
                           const std::function<Status(const Row&)>& fn);
};

struct OpenOptions {
  // Durable: a committed Write survives power loss (SQLite synchronous=FULL in
  // WAL mode; PostgreSQL synchronous_commit=on). Relaxed trades that for speed
  // (simulations that keep a ledger they will not reopen).
  bool durable = true;
  // Create the store (file / schema) when it does not exist yet. When false, a
  // missing store is an error.
  bool create = true;
  // How many times Write re-runs fn after a busy database (SQLite, each try
  // waiting up to 5 s for the lock) or a serialization failure or deadlock
  // (PostgreSQL), with a backoff of 1 to 100 ms between tries.
  int max_retries = 20;
};

// One connection. A Store may be shared by threads: its transactions run one
// at a time. Write or Read called from inside fn on the same Store is an error.
class Store {
 public:
  virtual ~Store() = default;
  virtual std::string_view backend() const = 0;  // "sqlite" or "postgresql"
  // The URL with any password replaced by "***", for messages.
  virtual std::string display_url() const = 0;
  virtual int schema_version() const = 0;

  // Runs fn inside one write transaction (SQLite: BEGIN IMMEDIATE; PostgreSQL:
  // ISOLATION LEVEL SERIALIZABLE) and commits when fn returns Ok; rolls back and
  // returns fn's error otherwise. A serialization failure or a busy database
  // rolls back and runs fn again from the start, up to max_retries times, so fn
  // must keep its effects inside the transaction (or be safe to repeat).
  virtual Status Write(const std::function<Status(Tx&)>& fn) = 0;
  // Runs fn in a read-only transaction that sees one consistent snapshot
  // (SQLite: BEGIN; PostgreSQL: REPEATABLE READ READ ONLY); a statement that
  // would change the store fails. fn runs once.
  virtual Status Read(const std::function<Status(Tx&)>& fn) = 0;
};

// Opens "sqlite:PATH" (PATH may be ":memory:"), "sqlite://PATH", or
// "postgresql://..." / "postgres://..." (libpq URI), and migrates the schema to
// the latest version. Clear errors for: a malformed or unknown URL, a file that
// is not a tidal store (not SQLite, or SQLite without tidal_meta but with other
// tables), a store whose schema is newer than this binary knows, a server that
// cannot be reached.
Result<std::unique_ptr<Store>> OpenStore(std::string_view url, const OpenOptions& options = {});

// Default store URL: sqlite:$XDG_DATA_HOME/tidal/tidal.db (or
// ~/.local/share/tidal/tidal.db); the folder is created on demand by OpenStore.
std::string DefaultStoreUrl();

// The latest schema version this binary knows.
int LatestSchemaVersion();

}  // namespace tidal::store
