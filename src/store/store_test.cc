// The store's tests. One conformance suite runs on both backends
// (store/Conformance.*/sqlite and .../postgresql); the PostgreSQL half needs a
// server named by TIDAL_TEST_POSTGRES_URL and skips without one. Each test gets
// a fresh database: a new SQLite file in its own folder, or a new PostgreSQL
// database created through the maintenance URL and dropped afterwards.
//
// Suite names start with "store" so that `ctest -R store` picks them all.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <pqxx/pqxx>

#include "store/postgres_store.h"
#include "store/schema.h"
#include "store/store.h"
#include "store/store_url_fuzz.h"
#include "store/url.h"

namespace tidal::store {
namespace {

namespace fs = std::filesystem;

constexpr char kPgSkip[] =
    "PostgreSQL store tests skipped: set TIDAL_TEST_POSTGRES_URL to a server's URL (scripts/pg-test-server.sh "
    "start DIR prints one; scripts/test.sh starts one itself)";

std::string RandomHex(int n) {
  static std::mt19937_64 rng(std::random_device{}());
  std::string out;
  for (int i = 0; i < n; ++i) out.push_back("0123456789abcdef"[rng() % 16]);
  return out;
}

// A folder of its own for one test, removed afterwards.
class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / fmt::format("tidal-store-test-{}-{}", getpid(), RandomHex(8))) {
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string ReadBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string ShowValue(const Value& v) {
  if (auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (auto* s = std::get_if<std::string>(&v)) return "'" + *s + "'";
  return "NULL";
}

// One fresh database on one backend, plus direct access to it that bypasses
// the store (to set up foreign tables and to check nothing changed).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string url() const = 0;
  virtual void RawExec(const std::string& sql) = 0;
  // Every table and its rows, as text: equal snapshots mean unchanged data.
  virtual std::string Snapshot() = 0;
};

class SqliteBackend final : public Backend {
 public:
  SqliteBackend() : file_(dir_.path() / "store.db") {}
  std::string url() const override { return "sqlite:" + file_.string(); }
  const fs::path& file() const { return file_; }
  void RawExec(const std::string& sql) override {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(file_.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    std::string msg = err ? err : "";
    sqlite3_free(err);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << msg;
  }
  // The file's bytes: stricter than its rows (a WAL switch would show too).
  std::string Snapshot() override { return ReadBytes(file_); }

 private:
  TempDir dir_;
  fs::path file_;
};

const char* PostgresBaseUrl() {
  const char* url = std::getenv("TIDAL_TEST_POSTGRES_URL");
  return url && url[0] ? url : nullptr;
}

class PostgresBackend final : public Backend {
 public:
  PostgresBackend() : base_(PostgresBaseUrl()), name_(fmt::format("tidal_test_{}_{}", getpid(), RandomHex(10))) {
    pqxx::connection maintenance(base_);
    pqxx::nontransaction(maintenance).exec("CREATE DATABASE " + name_);
    url_ = base_ + (base_.find('?') == std::string::npos ? "?" : "&") + "dbname=" + name_;
  }
  ~PostgresBackend() override {
    try {
      pqxx::connection maintenance(base_);
      pqxx::nontransaction(maintenance).exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    } catch (const std::exception& e) {
      ADD_FAILURE() << "dropping test database " << name_ << ": " << e.what();
    }
  }
  std::string url() const override { return url_; }
  void RawExec(const std::string& sql) override {
    pqxx::connection c(url_);
    pqxx::nontransaction(c).exec(sql);
  }
  std::string Snapshot() override {
    pqxx::connection c(url_);
    pqxx::nontransaction t(c);
    std::string out;
    for (const auto& table : t.exec("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")) {
      const std::string name = table[0].c_str();
      out += "table " + name + "\n";
      std::vector<std::string> rows;
      for (const auto& row : t.exec("SELECT * FROM " + c.quote_name(name))) {
        std::string line;
        for (const auto& f : row) line += f.is_null() ? std::string("NULL,") : fmt::format("'{}',", f.c_str());
        rows.push_back(line);
      }
      std::sort(rows.begin(), rows.end());
      for (const auto& r : rows) out += r + "\n";
    }
    return out;
  }

 private:
  std::string base_, name_, url_;
};

// --- helpers over a Store --------------------------------------------------

std::unique_ptr<Store> MustOpen(const std::string& url, const OpenOptions& options = {}) {
  auto s = OpenStore(url, options);
  EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().ToString());
  return s ? std::move(*s) : nullptr;
}

Rows MustQuery(Store& store, std::string_view sql, std::vector<Value> params = {}) {
  Rows out;
  auto s = store.Read([&](Tx& tx) -> Status {
    TIDAL_ASSIGN_OR_RETURN(out, tx.Query(sql, params));
    return Ok();
  });
  EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().ToString());
  return out;
}

// PRAGMAs are not read-only statements to SQLite, so they are asked inside Write.
Value Pragma(Store& store, std::string_view sql) {
  Value out;
  auto s = store.Write([&](Tx& tx) -> Status {
    TIDAL_ASSIGN_OR_RETURN(Rows r, tx.Query(sql));
    if (!r.rows.empty() && !r.rows[0].empty()) out = r.rows[0][0];
    return Ok();
  });
  EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().ToString());
  return out;
}

// Result<T> to Status, for fns that end in a statement.
template <typename T>
Status Done(Result<T> r) {
  if (!r) return std::unexpected(std::move(r).error());
  return Ok();
}

void MustWrite(Store& store, std::string_view sql, std::vector<Value> params = {}) {
  auto s = store.Write([&](Tx& tx) { return Done(tx.Exec(sql, params)); });
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
}

std::int64_t CountRows(Store& store, std::string_view table) {
  Rows r = MustQuery(store, fmt::format("SELECT COUNT(*) FROM {}", table));
  if (r.rows.size() != 1) return -1;
  auto n = AsInt(r.rows[0], 0);
  EXPECT_TRUE(n.has_value()) << (n ? "" : n.error().ToString());
  return n.value_or(-1);
}

// --- the conformance suite ---------------------------------------------------

class Conformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgresql") {
      if (!PostgresBaseUrl()) GTEST_SKIP() << kPgSkip;
      backend_ = std::make_unique<PostgresBackend>();
    } else {
      backend_ = std::make_unique<SqliteBackend>();
    }
  }
  std::string url() const { return backend_->url(); }

  std::unique_ptr<Backend> backend_;
};

TEST_P(Conformance, OpensEmptyDatabaseAtLatestVersion) {
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  EXPECT_EQ(store->backend(), GetParam());
  EXPECT_EQ(store->schema_version(), LatestSchemaVersion());
  Rows meta = MustQuery(*store, "SELECT key, value FROM tidal_meta ORDER BY key");
  ASSERT_EQ(meta.rows.size(), 2u);
  EXPECT_EQ(AsText(meta.rows[0], 0).value(), "app");
  EXPECT_EQ(AsText(meta.rows[0], 1).value(), "tidal");
  EXPECT_EQ(AsText(meta.rows[1], 0).value(), "schema_version");
  EXPECT_EQ(AsText(meta.rows[1], 1).value(), std::to_string(LatestSchemaVersion()));
  for (const char* table : {"ledger_accounts", "ledger_transfers", "ledger_holds"}) EXPECT_EQ(CountRows(*store, table), 0);
}

TEST_P(Conformance, RoundTripsNullIntegersAndText) {
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  const std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  const std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const std::vector<std::pair<std::int64_t, Value>> ints = {{1, std::monostate{}}, {2, kMin}, {3, kMax}, {4, 0}, {5, -1}};
  const std::vector<std::string> texts = {"it's", "a ? b", "", "'?'", "\"quoted\" ?", "ünïcødé ✓", "--", "/* ? */",
                                          std::string(10000, 'x')};
  ASSERT_TRUE(store->Write([&](Tx& tx) -> Status {
    TIDAL_RETURN_IF_ERROR(tx.Exec("CREATE TABLE t (id BIGINT PRIMARY KEY, n BIGINT, s TEXT)"));
    for (const auto& [id, n] : ints) {
      const Value params[] = {id, n};
      // The '?' inside the literal is not a placeholder.
      TIDAL_RETURN_IF_ERROR(tx.Exec("INSERT INTO t (id, n, s) VALUES (?, ?, 'lit ? with ''quote''')", params));
    }
    for (std::size_t i = 0; i < texts.size(); ++i) {
      const Value params[] = {static_cast<std::int64_t>(100 + i), texts[i]};
      TIDAL_RETURN_IF_ERROR(tx.Exec("INSERT INTO t (id, n, s) VALUES (?, NULL, ?)", params));
    }
    return Ok();
  }));

  Rows r = MustQuery(*store, "SELECT id, n, s FROM t WHERE id < ? AND s <> '?' ORDER BY id", {std::int64_t{100}});
  ASSERT_EQ(r.columns, (std::vector<std::string>{"id", "n", "s"}));
  ASSERT_EQ(r.rows.size(), ints.size());
  for (std::size_t i = 0; i < ints.size(); ++i) {
    EXPECT_EQ(AsInt(r.rows[i], 0).value(), ints[i].first);
    EXPECT_EQ(r.rows[i][1], ints[i].second) << "row " << i << ": " << ShowValue(r.rows[i][1]);
    EXPECT_EQ(AsText(r.rows[i], 2).value(), "lit ? with 'quote'");
  }
  EXPECT_TRUE(IsNull(r.rows[0], 1));
  EXPECT_FALSE(IsNull(r.rows[1], 1));

  Rows t = MustQuery(*store, "SELECT s, n FROM t WHERE id >= 100 ORDER BY id");
  ASSERT_EQ(t.rows.size(), texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(AsText(t.rows[i], 0).value(), texts[i]);
    EXPECT_TRUE(IsNull(t.rows[i], 1));
  }
  // Text parameters compare as text, whatever they hold.
  Rows q = MustQuery(*store, "SELECT id FROM t WHERE s = ?", {std::string("a ? b")});
  ASSERT_EQ(q.rows.size(), 1u);
  EXPECT_EQ(AsInt(q.rows[0], 0).value(), 101);
  // Typed access names the mismatch.
  auto wrong = AsInt(t.rows[0], 0);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("not an integer"), std::string::npos) << wrong.error().message;
}

TEST_P(Conformance, AggregatesComeBackAsIntegers) {
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  MustWrite(*store, "CREATE TABLE t (n BIGINT NOT NULL)");
  for (std::int64_t n : {5, 7, 30}) MustWrite(*store, "INSERT INTO t (n) VALUES (?)", {n});
  Rows r = MustQuery(*store, "SELECT COUNT(*), SUM(n), MAX(n), COUNT(*) > 2 FROM t");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(AsInt(r.rows[0], 0).value(), 3);
  EXPECT_EQ(AsInt(r.rows[0], 1).value(), 42);  // numeric on PostgreSQL
  EXPECT_EQ(AsInt(r.rows[0], 2).value(), 30);
  EXPECT_EQ(AsInt(r.rows[0], 3).value(), 1);  // bool on PostgreSQL
}

TEST_P(Conformance, ExecReturnsRowsChanged) {
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->Write([&](Tx& tx) -> Status {
    TIDAL_ASSIGN_OR_RETURN(std::int64_t ddl, tx.Exec("CREATE TABLE t (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)"));
    EXPECT_EQ(ddl, 0);
    for (std::int64_t i = 1; i <= 5; ++i) {
      const Value p[] = {i, i * 10};
      TIDAL_ASSIGN_OR_RETURN(std::int64_t one, tx.Exec("INSERT INTO t (id, n) VALUES (?, ?)", p));
      EXPECT_EQ(one, 1);
    }
    const Value gt[] = {std::int64_t{25}};
    TIDAL_ASSIGN_OR_RETURN(std::int64_t updated, tx.Exec("UPDATE t SET n = n + 1 WHERE n > ?", gt));
    EXPECT_EQ(updated, 3);
    TIDAL_ASSIGN_OR_RETURN(std::int64_t none, tx.Exec("UPDATE t SET n = 0 WHERE id = 99"));
    EXPECT_EQ(none, 0);
    const Value dup[] = {std::int64_t{1}};
    TIDAL_ASSIGN_OR_RETURN(std::int64_t ignored,
                           tx.Exec("INSERT INTO t (id, n) VALUES (?, 0) ON CONFLICT (id) DO NOTHING", dup));
    EXPECT_EQ(ignored, 0);
    TIDAL_ASSIGN_OR_RETURN(std::int64_t deleted, tx.Exec("DELETE FROM t WHERE id <= 2"));
    EXPECT_EQ(deleted, 2);
    return Ok();
  }));
  EXPECT_EQ(CountRows(*store, "t"), 3);
}

TEST_P(Conformance, WriteCommitsAndReadSeesIt) {
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  MustWrite(*store, "CREATE TABLE t (id BIGINT PRIMARY KEY)");
  ASSERT_TRUE(store->Write([](Tx& tx) -> Status {
    TIDAL_RETURN_IF_ERROR(tx.Exec("INSERT INTO t (id) VALUES (1)"));
    TIDAL_ASSIGN_OR_RETURN(Rows inside, tx.Query("SELECT COUNT(*) FROM t"));
    EXPECT_EQ(AsInt(inside.rows[0], 0).value(), 1);  // a transaction sees its own writes
    return Done(tx.Exec("INSERT INTO t (id) VALUES (2)"));
  }));
  EXPECT_EQ(CountRows(*store, "t"), 2);
  // A second Store on the same database sees it too.
  auto other = MustOpen(url());
  ASSERT_TRUE(other);
  EXPECT_EQ(CountRows(*other, "t"), 2);
}

TEST_P(Conformance, WriteRollsBackWhenFnFails) {
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  MustWrite(*store, "CREATE TABLE t (id BIGINT PRIMARY KEY)");
  int runs = 0;
  auto s = store->Write([&](Tx& tx) -> Status {
    ++runs;
    TIDAL_RETURN_IF_ERROR(tx.Exec("INSERT INTO t (id) VALUES (1)"));
    return MakeError(ErrorCode::kFailedPrecondition, "insufficient funds");
  });
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(s.error().message, "insufficient funds");
  EXPECT_EQ(runs, 1);  // fn's own errors are not retried
  EXPECT_EQ(CountRows(*store, "t"), 0);
}

TEST_P(Conformance, FailedStatementAbortsTheTransaction) {
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  MustWrite(*store, "CREATE TABLE t (id BIGINT PRIMARY KEY)");
  MustWrite(*store, "INSERT INTO t (id) VALUES (1)");
  // fn ignores the duplicate-key error and goes on: as on PostgreSQL, the
  // transaction is lost on both backends and Write says so.
  auto s = store->Write([&](Tx& tx) -> Status {
    auto dup = tx.Exec("INSERT INTO t (id) VALUES (1)");
    EXPECT_FALSE(dup);
    if (!dup) {
      EXPECT_EQ(dup.error().code, ErrorCode::kFailedPrecondition) << dup.error().ToString();
    }
    auto after = tx.Exec("INSERT INTO t (id) VALUES (2)");
    EXPECT_FALSE(after);
    if (!after) {
      EXPECT_NE(after.error().message.find("earlier statement"), std::string::npos) << after.error().message;
    }
    return Ok();
  });
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("nothing was committed"), std::string::npos) << s.error().message;
  EXPECT_EQ(CountRows(*store, "t"), 1);
  // The store is fine afterwards.
  MustWrite(*store, "INSERT INTO t (id) VALUES (3)");
  EXPECT_EQ(CountRows(*store, "t"), 2);
}

TEST_P(Conformance, ReadRefusesWrites) {
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  MustWrite(*store, "CREATE TABLE t (id BIGINT PRIMARY KEY)");
  auto s = store->Read([](Tx& tx) -> Status { return Done(tx.Exec("INSERT INTO t (id) VALUES (1)")); });
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kFailedPrecondition) << s.error().ToString();
  EXPECT_EQ(CountRows(*store, "t"), 0);
}

TEST_P(Conformance, ErrorsNameTheStoreAndTheStatement) {
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  auto s = store->Read([](Tx& tx) -> Status {
    return Done(tx.Query("SELECT nonsense FROM no_such_table WHERE x = 1"));
  });
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument) << s.error().ToString();
  EXPECT_NE(s.error().message.find("SELECT nonsense FROM no_such_table"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find(store->display_url()), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("no_such_table"), std::string::npos);
}

TEST_P(Conformance, PlaceholderCountMustMatch) {
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  auto s = store->Read([](Tx& tx) -> Status {
    const Value one[] = {std::int64_t{1}};
    return Done(tx.Query("SELECT ? + ?, '?'", one));
  });
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().message.find("has 2 placeholders but was given 1 values"), std::string::npos)
      << s.error().message;
}

TEST_P(Conformance, OneStatementPerCall) {
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  MustWrite(*store, "CREATE TABLE t (id BIGINT PRIMARY KEY)");
  auto s = store->Write([](Tx& tx) -> Status {
    return Done(tx.Exec("INSERT INTO t (id) VALUES (1); INSERT INTO t (id) VALUES (2)"));
  });
  ASSERT_FALSE(s);
  EXPECT_EQ(CountRows(*store, "t"), 0);
  // A trailing ';' (and comment) is fine.
  MustWrite(*store, "INSERT INTO t (id) VALUES (1); -- done");
  EXPECT_EQ(CountRows(*store, "t"), 1);
}

TEST_P(Conformance, NestedTransactionIsAnError) {
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  Status inner;
  ASSERT_TRUE(store->Write([&](Tx&) -> Status {
    inner = store->Read([](Tx&) { return Ok(); });
    return Ok();
  }));
  ASSERT_FALSE(inner);
  EXPECT_EQ(inner.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(inner.error().message.find("inside another Write or Read"), std::string::npos);
}

TEST_P(Conformance, ReopenKeepsDataAndVersion) {
  {
    auto store = MustOpen(url());
    ASSERT_TRUE(store);
    MustWrite(*store,
              "INSERT INTO ledger_accounts (name, kind, flags, debits_pending, debits_posted, credits_pending, "
              "credits_posted, created_seq) VALUES (?, 'tenant', 0, 0, 7, 0, 0, 1)",
              {std::string("acme")});
  }
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  EXPECT_EQ(store->schema_version(), LatestSchemaVersion());
  Rows r = MustQuery(*store, "SELECT name, debits_posted FROM ledger_accounts");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(AsText(r.rows[0], 0).value(), "acme");
  EXPECT_EQ(AsInt(r.rows[0], 1).value(), 7);
  EXPECT_EQ(CountRows(*store, "tidal_meta"), 2);
}

TEST_P(Conformance, AppliesMissingMigrations) {
  // A store left at version 0 (tidal_meta, no ledger tables) gets migration 1
  // and on, as a store from an older tidal would get the newer ones.
  {
    auto store = MustOpen(url());
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->Write([](Tx& tx) -> Status {
      for (const char* t : {"ledger_holds", "ledger_transfers", "ledger_accounts", "jobs", "api_tokens", "audit_log", "daemon_meta", "daemon_inputs"})
        TIDAL_RETURN_IF_ERROR(tx.Exec(fmt::format("DROP TABLE {}", t)));
      return Done(tx.Exec("UPDATE tidal_meta SET value = '0' WHERE key = 'schema_version'"));
    }));
  }
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  EXPECT_EQ(store->schema_version(), LatestSchemaVersion());
  EXPECT_EQ(CountRows(*store, "ledger_transfers"), 0);
  EXPECT_EQ(CountRows(*store, "jobs"), 0);
  Rows v = MustQuery(*store, "SELECT value FROM tidal_meta WHERE key = 'schema_version'");
  EXPECT_EQ(AsText(v.rows.at(0), 0).value(), std::to_string(LatestSchemaVersion()));
}

TEST_P(Conformance, UpgradesALedgerOnlyStoreToTheDaemonsSchema) {
  // A store from before the daemon (version 1: the ledger, with an account)
  // gets migration 2 and keeps its data.
  {
    auto store = MustOpen(url());
    ASSERT_TRUE(store);
    MustWrite(*store,
              "INSERT INTO ledger_accounts (name, kind, flags, debits_pending, debits_posted, credits_pending, "
              "credits_posted, created_seq) VALUES ('acme', 'tenant', 0, 0, 0, 0, 0, 1)");
    ASSERT_TRUE(store->Write([](Tx& tx) -> Status {
      for (const char* t : {"jobs", "api_tokens", "audit_log", "daemon_meta", "daemon_inputs"})
        TIDAL_RETURN_IF_ERROR(tx.Exec(fmt::format("DROP TABLE {}", t)));
      return Done(tx.Exec("UPDATE tidal_meta SET value = '1' WHERE key = 'schema_version'"));
    }));
  }
  {
    auto store = MustOpen(url());
    ASSERT_TRUE(store);
    EXPECT_EQ(store->schema_version(), LatestSchemaVersion());
    EXPECT_EQ(CountRows(*store, "ledger_accounts"), 1);
    EXPECT_EQ(CountRows(*store, "api_tokens"), 0);
    EXPECT_EQ(CountRows(*store, "audit_log"), 0);
    EXPECT_EQ(CountRows(*store, "daemon_inputs"), 0);
    // A daemon's store from before operator inputs (version 2, with an
    // audit entry) gets migration 3 and keeps its data.
    MustWrite(*store, "INSERT INTO audit_log (seq, at, token, role, method, path, status, object) VALUES (1, 1, 't', 'admin', 'POST', '/v1/jobs', 201, 'job/1')");
    ASSERT_TRUE(store->Write([](Tx& tx) -> Status {
      TIDAL_RETURN_IF_ERROR(tx.Exec("DROP TABLE daemon_inputs"));
      return Done(tx.Exec("UPDATE tidal_meta SET value = '2' WHERE key = 'schema_version'"));
    }));
  }
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  EXPECT_EQ(store->schema_version(), 3);
  EXPECT_EQ(CountRows(*store, "ledger_accounts"), 1);
  EXPECT_EQ(CountRows(*store, "audit_log"), 1);
  EXPECT_EQ(CountRows(*store, "daemon_inputs"), 0);
}

TEST_P(Conformance, NewerSchemaIsRefusedAndLeftAlone) {
  const int newer = LatestSchemaVersion() + 1;
  {
    auto store = MustOpen(url());
    ASSERT_TRUE(store);
    MustWrite(*store,
              "INSERT INTO ledger_accounts (name, kind, flags, debits_pending, debits_posted, credits_pending, "
              "credits_posted, created_seq) VALUES ('acme', 'tenant', 0, 0, 0, 0, 0, 1)");
    MustWrite(*store, "UPDATE tidal_meta SET value = ? WHERE key = 'schema_version'", {std::to_string(newer)});
  }
  const std::string before = backend_->Snapshot();
  auto again = OpenStore(url());
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::kFailedPrecondition);
  const std::string expected = fmt::format("has schema version {}, newer than this tidal ({}): upgrade tidal", newer,
                                           LatestSchemaVersion());
  EXPECT_NE(again.error().message.find(expected), std::string::npos) << again.error().message;
  EXPECT_NE(again.error().message.find(RedactUrl(url())), std::string::npos) << again.error().message;
  EXPECT_EQ(backend_->Snapshot(), before);
}

TEST_P(Conformance, ForeignDatabaseIsRefusedAndLeftAlone) {
  backend_->RawExec("CREATE TABLE beta (x BIGINT)");
  backend_->RawExec("CREATE TABLE alpha (y TEXT)");
  backend_->RawExec("INSERT INTO alpha (y) VALUES ('keep me')");
  const std::string before = backend_->Snapshot();
  auto store = OpenStore(url());
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(store.error().message.find(RedactUrl(url()) + " is not a tidal store (found tables: alpha, beta)"),
            std::string::npos)
      << store.error().message;
  EXPECT_EQ(backend_->Snapshot(), before);
}

TEST_P(Conformance, TidalMetaOfAnotherAppIsRefused) {
  backend_->RawExec("CREATE TABLE tidal_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  backend_->RawExec("INSERT INTO tidal_meta (key, value) VALUES ('app', 'other'), ('schema_version', '1')");
  const std::string before = backend_->Snapshot();
  auto store = OpenStore(url());
  ASSERT_FALSE(store);
  EXPECT_NE(store.error().message.find("is not a tidal store (found tables: tidal_meta)"), std::string::npos)
      << store.error().message;
  EXPECT_NE(store.error().message.find("app='other'"), std::string::npos) << store.error().message;
  EXPECT_EQ(backend_->Snapshot(), before);
}

TEST_P(Conformance, CreateUnsetNeedsAnExistingStore) {
  OpenOptions no_create;
  no_create.create = false;
  auto missing = OpenStore(url(), no_create);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound) << missing.error().ToString();
  MustOpen(url());  // creates it
  EXPECT_TRUE(MustOpen(url(), no_create));
}

TEST_P(Conformance, RelaxedDurabilityWorks) {
  OpenOptions relaxed;
  relaxed.durable = false;
  auto store = MustOpen(url(), relaxed);
  ASSERT_TRUE(store);
  MustWrite(*store, "CREATE TABLE t (id BIGINT)");
  MustWrite(*store, "INSERT INTO t (id) VALUES (1)");
  EXPECT_EQ(CountRows(*store, "t"), 1);
}

TEST_P(Conformance, ConcurrentWritersAddUp) {
  auto a = MustOpen(url());
  auto b = MustOpen(url());
  ASSERT_TRUE(a && b);
  MustWrite(*a, "CREATE TABLE counter (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)");
  MustWrite(*a, "INSERT INTO counter (id, n) VALUES (1, 0)");
  constexpr int kPerThread = 100;
  std::atomic<int> runs{0}, failures{0};
  auto work = [&](Store& store) {
    for (int i = 0; i < kPerThread; ++i) {
      // Read-modify-write: lost updates would show in the total.
      auto s = store.Write([&](Tx& tx) -> Status {
        runs.fetch_add(1);
        TIDAL_ASSIGN_OR_RETURN(Rows r, tx.Query("SELECT n FROM counter WHERE id = 1"));
        TIDAL_ASSIGN_OR_RETURN(std::int64_t n, AsInt(r.rows.at(0), 0));
        const Value p[] = {n + 1};
        return Done(tx.Exec("UPDATE counter SET n = ? WHERE id = 1", p));
      });
      if (!s) {
        failures.fetch_add(1);
        ADD_FAILURE() << s.error().ToString();
      }
    }
  };
  std::thread ta(work, std::ref(*a));
  std::thread tb(work, std::ref(*b));
  ta.join();
  tb.join();
  EXPECT_EQ(failures.load(), 0);
  Rows r = MustQuery(*a, "SELECT n FROM counter WHERE id = 1");
  EXPECT_EQ(AsInt(r.rows.at(0), 0).value(), 2 * kPerThread);
  std::printf("[ info ] %s: %d fn runs for %d writes (%d retried)\n", GetParam().c_str(), runs.load(),
              2 * kPerThread, runs.load() - 2 * kPerThread);
}

TEST_P(Conformance, OneStoreSharedByThreads) {
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  MustWrite(*store, "CREATE TABLE t (id BIGINT PRIMARY KEY)");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const Value p[] = {std::int64_t{t * 1000 + i}};
        auto s = store->Write([&](Tx& tx) { return Done(tx.Exec("INSERT INTO t (id) VALUES (?)", p)); });
        if (!s) ADD_FAILURE() << s.error().ToString();
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(CountRows(*store, "t"), 100);
}

TEST_P(Conformance, ConcurrentFirstOpensMigrateOnce) {
  std::vector<std::unique_ptr<Store>> stores(4);
  std::vector<std::string> errors(stores.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < stores.size(); ++i)
    threads.emplace_back([&, i] {
      auto s = OpenStore(url());
      if (s) {
        stores[i] = std::move(*s);
      } else {
        errors[i] = s.error().ToString();
      }
    });
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < stores.size(); ++i) {
    ASSERT_TRUE(stores[i]) << errors[i];
    EXPECT_EQ(stores[i]->schema_version(), LatestSchemaVersion());
  }
  EXPECT_EQ(CountRows(*stores[0], "tidal_meta"), 2);
}

TEST_P(Conformance, QueryReturning) {
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  MustWrite(*store, "CREATE TABLE t (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)");
  Rows r;
  ASSERT_TRUE(store->Write([&](Tx& tx) -> Status {
    const Value p[] = {std::int64_t{1}, std::int64_t{41}};
    TIDAL_ASSIGN_OR_RETURN(r, tx.Query("INSERT INTO t (id, n) VALUES (?, ?) RETURNING id, n + 1", p));
    return Ok();
  }));
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(AsInt(r.rows[0], 1).value(), 42);
  EXPECT_EQ(CountRows(*store, "t"), 1);
}

// QueryEach passes the rows Query returns, in order, one by one (a reused
// Row: a text cell may follow an integer or NULL in the same column, and a
// shorter text a longer one); fn's first error stops it and comes back, and
// the transaction goes on.
TEST_P(Conformance, QueryEachPassesQuerysRowsAndStopsAtAnError) {
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  MustWrite(*store, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)");
  MustWrite(*store, "INSERT INTO t (id, v) VALUES (1, 'a long text that outgrows any small buffer'), (2, 'b'), "
                    "(3, NULL), (4, 'dd')");
  const std::string sql = "SELECT id, v, CASE WHEN id = 2 THEN id ELSE NULL END FROM t WHERE id >= ? ORDER BY id";
  const Value from[] = {std::int64_t{1}};
  Rows want;
  std::vector<Row> got;
  int seen = 0;
  ASSERT_TRUE(store->Read([&](Tx& tx) -> Status {
    TIDAL_ASSIGN_OR_RETURN(want, tx.Query(sql, from));
    TIDAL_RETURN_IF_ERROR(tx.QueryEach(sql, from, [&](const Row& row) -> Status {
      got.push_back(row);
      return Ok();
    }));
    Status stopped = tx.QueryEach(sql, from, [&](const Row&) -> Status {
      ++seen;
      return seen == 2 ? MakeError(ErrorCode::kFailedPrecondition, "enough") : Ok();
    });
    EXPECT_FALSE(stopped.has_value());
    EXPECT_EQ(stopped ? "" : stopped.error().message, "enough");
    // The transaction is still good.
    TIDAL_ASSIGN_OR_RETURN(Rows after, tx.Query("SELECT COUNT(*) FROM t"));
    EXPECT_EQ(AsInt(after.rows.at(0), 0).value(), 4);
    return Ok();
  }));
  ASSERT_EQ(want.rows.size(), 4u);
  EXPECT_EQ(got, want.rows);
  EXPECT_EQ(seen, 2);
  EXPECT_EQ(AsText(got[1], 1).value(), "b");
  EXPECT_TRUE(IsNull(got[2], 1));
  EXPECT_EQ(AsInt(got[1], 2).value(), 2);
  EXPECT_TRUE(IsNull(got[3], 2));
}

// Tests of PostgreSQL matters only, on the conformance fixture.
class PostgresOnly : public Conformance {};

TEST_P(PostgresOnly, RecoversFromALostConnection) {
  auto store = MustOpen(url());
  ASSERT_TRUE(store);
  MustWrite(*store, "CREATE TABLE t (id BIGINT PRIMARY KEY)");
  // The server ends the idle session, as a restart or failover would: the
  // next transaction notices at BEGIN, reconnects and goes on.
  auto kill_others = [&] {
    backend_->RawExec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                      "AND pid <> pg_backend_pid()");
  };
  kill_others();
  MustWrite(*store, "INSERT INTO t (id) VALUES (1)");
  kill_others();
  EXPECT_EQ(CountRows(*store, "t"), 1);
  // Lost in the middle of a Write: nothing was committed, so fn runs again on
  // a new connection (with its statements prepared again).
  int runs = 0;
  ASSERT_TRUE(store->Write([&](Tx& tx) -> Status {
    TIDAL_RETURN_IF_ERROR(tx.Exec("INSERT INTO t (id) VALUES (2)"));
    if (++runs == 1) {
      auto gone = tx.Query("SELECT pg_terminate_backend(pg_backend_pid())");
      EXPECT_FALSE(gone);
      if (!gone) {
        EXPECT_EQ(gone.error().code, ErrorCode::kIo) << gone.error().ToString();
      }
      return Done(std::move(gone));
    }
    return Ok();
  }));
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(CountRows(*store, "t"), 2);
}

TEST_P(PostgresOnly, RelaxedDurabilityTurnsSynchronousCommitOff) {
  OpenOptions relaxed;
  relaxed.durable = false;
  auto fast = MustOpen(url(), relaxed);
  auto durable = MustOpen(url());
  ASSERT_TRUE(fast && durable);
  EXPECT_EQ(AsText(MustQuery(*fast, "SHOW synchronous_commit").rows.at(0), 0).value(), "off");
  EXPECT_EQ(AsText(MustQuery(*durable, "SHOW synchronous_commit").rows.at(0), 0).value(), "on");
}

std::string BackendName(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(store, Conformance, ::testing::Values("sqlite", "postgresql"), BackendName);
INSTANTIATE_TEST_SUITE_P(store, PostgresOnly, ::testing::Values("postgresql"), BackendName);

// --- bad URLs ------------------------------------------------------------------

struct BadUrl {
  std::string url;
  ErrorCode code;
  std::string message_has;
};

TEST(store, BadUrlsAreRejectedWithAClearMessage) {
  TempDir dir;
  const fs::path file = dir.path() / "plain-file";
  std::ofstream(file) << "not a folder";
  const std::vector<BadUrl> rows = {
      {"", ErrorCode::kInvalidArgument, "the store URL is empty: use sqlite:PATH"},
      {"mysql://root:hunter2@db/tidal", ErrorCode::kInvalidArgument, "unknown store URL scheme 'mysql'"},
      {"/var/lib/tidal/tidal.db", ErrorCode::kInvalidArgument, "has no scheme: write sqlite:/var/lib/tidal/tidal.db"},
      {"tidal.db", ErrorCode::kInvalidArgument, "has no scheme"},
      {"sqlite:", ErrorCode::kInvalidArgument, "has no path"},
      {"sqlite://", ErrorCode::kInvalidArgument, "has no path"},
      {"sqlite:x.db?mode=ro", ErrorCode::kInvalidArgument, "take no options"},
      {std::string("sqlite:a\0b", 10), ErrorCode::kInvalidArgument, "NUL byte"},
      {"postgres:tidal", ErrorCode::kInvalidArgument, "is not a PostgreSQL URI"},
      {"postgresql://[::1/tidal", ErrorCode::kInvalidArgument, "cannot parse PostgreSQL URL"},
      {"postgresql://h/db?sslmode", ErrorCode::kInvalidArgument, "cannot parse PostgreSQL URL"},
      {"postgresql://u:hunter2@h/db?no_such_option=1", ErrorCode::kInvalidArgument, "no_such_option"},
      {"postgresql://h/db?password=hunter2&bogus=1", ErrorCode::kInvalidArgument, "password=***"},
      {"postgresql:///tidal?host=/nonexistent/socket/dir", ErrorCode::kIo, "cannot connect to store"},
      {"sqlite:" + (file / "sub" / "x.db").string(), ErrorCode::kIo, "cannot create the folder"},
      {"sqlite:" + dir.path().string(), ErrorCode::kInvalidArgument, "is a folder"},
  };
  for (const BadUrl& row : rows) {
    SCOPED_TRACE("URL: " + row.url);
    auto s = OpenStore(row.url);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, row.code) << s.error().ToString();
    EXPECT_NE(s.error().message.find(row.message_has), std::string::npos) << s.error().message;
    EXPECT_EQ(s.error().message.find("hunter2"), std::string::npos) << "password shown: " << s.error().message;
  }
  OpenOptions negative;
  negative.max_retries = -1;
  EXPECT_FALSE(OpenStore("sqlite::memory:", negative));
}

TEST(store, UrlForms) {
  auto a = ParseStoreUrl("sqlite:/var/lib/tidal/tidal.db");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, StoreUrl::Kind::kSqlite);
  EXPECT_EQ(a->path, "/var/lib/tidal/tidal.db");
  EXPECT_EQ(ParseStoreUrl("sqlite:///var/x.db")->path, "/var/x.db");
  EXPECT_EQ(ParseStoreUrl("sqlite://rel/x.db")->path, "rel/x.db");
  EXPECT_EQ(ParseStoreUrl("sqlite:rel.db")->path, "rel.db");
  EXPECT_EQ(ParseStoreUrl("sqlite::memory:")->path, ":memory:");
  EXPECT_EQ(ParseStoreUrl("SQLite::memory:")->path, ":memory:");
  auto p = ParseStoreUrl("PostgreSQL://tidal:s3cret@db.example:5433/tidal?sslmode=require");
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->kind, StoreUrl::Kind::kPostgres);
  EXPECT_EQ(p->conninfo, "postgresql://tidal:s3cret@db.example:5433/tidal?sslmode=require");
  EXPECT_EQ(p->display, "PostgreSQL://tidal:***@db.example:5433/tidal?sslmode=require");
  EXPECT_TRUE(ParseStoreUrl("postgres:///tidal?host=/run/postgresql"));
}

TEST(store, RedactUrlHidesPasswords) {
  EXPECT_EQ(RedactUrl("postgresql://u:pw@h/db"), "postgresql://u:***@h/db");
  EXPECT_EQ(RedactUrl("postgresql://u@h/db"), "postgresql://u@h/db");
  EXPECT_EQ(RedactUrl("postgresql://h/db?user=u&password=pw&sslmode=disable"),
            "postgresql://h/db?user=u&password=***&sslmode=disable");
  EXPECT_EQ(RedactUrl("postgresql://u:p?w@h/db?PASSWORD=x"), "postgresql://u:***@h/db?PASSWORD=***");
  EXPECT_EQ(RedactUrl("postgresql://h:5432/db"), "postgresql://h:5432/db");
  EXPECT_EQ(RedactUrl("sqlite:/tmp/x.db"), "sqlite:/tmp/x.db");
}

// --- the URL fuzz body, under g++ ----------------------------------------------

TEST(store, UrlFuzzCorpus) {
  const std::vector<std::string> corpus = {
      "", ":", "::", "sqlite", "sqlite:", "sqlite:/", "sqlite://", "sqlite:///", "sqlite::memory:", "sqlite:?",
      "sqlite:\xff\xfe", std::string("sqlite:\0", 8), "postgresql:", "postgresql:/", "postgresql://",
      "postgresql:///", "postgresql://@", "postgresql://:@", "postgresql://u:@h", "postgresql://:p@h",
      "postgresql://u:p@", "postgresql://[", "postgresql://[]", "postgresql://[::1]:99999999999/db",
      "postgresql://h/db?", "postgresql://h/db?&", "postgresql://h/db?=", "postgresql://h/db?a=b=c",
      "postgresql://h/db?password=", "postgresql://h/db?password", "postgresql://h/%zz", "postgresql://h/%",
      "postgresql://h,h2,h3/db", "postgresql://h/db?host=/tmp&port=x", "postgres://u:p@h/d?password=a&password=b",
      "://", "a://b:c@d", "a:b", "1:2", "+:x", "-://", std::string(5000, ':'), "sqlite:" + std::string(5000, '/'),
      "postgresql://" + std::string(3000, '@'), "postgresql://" + std::string(3000, '['),
      "postgresql://u:" + std::string(2000, ':') + "@h", "mysql://u:pw@h", "SQLITE:X", "sQlItE://y",
  };
  for (const std::string& s : corpus) FuzzStoreUrl(s);
}

RC_GTEST_PROP(storeUrl, FuzzBodyHoldsOnRandomStrings, (const std::string& tail)) {
  static const char* kPrefixes[] = {"", "sqlite:", "sqlite://", "postgresql://", "postgres://u:p@", "x://"};
  const std::string prefix = kPrefixes[*rc::gen::inRange<std::size_t>(0, std::size(kPrefixes))];
  FuzzStoreUrl(prefix + tail);
}

// --- SQLite files ----------------------------------------------------------------

TEST(store, RandomBytesAreNotAStoreAndStayUntouched) {
  TempDir dir;
  const fs::path file = dir.path() / "random.bin";
  std::string bytes(8192, '\0');
  std::mt19937 rng(7);
  for (char& c : bytes) c = static_cast<char>(rng());
  std::ofstream(file, std::ios::binary) << bytes;
  auto s = OpenStore("sqlite:" + file.string());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(s.error().message.find("is not a tidal store"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("not an SQLite database"), std::string::npos) << s.error().message;
  EXPECT_EQ(ReadBytes(file), bytes);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1) << "no -wal/-shm left";
  // A file that starts like SQLite but is damaged is refused too, untouched.
  const fs::path damaged = dir.path() / "damaged.db";
  std::string fake = std::string("SQLite format 3", 16) + bytes;
  std::ofstream(damaged, std::ios::binary) << fake;
  auto d = OpenStore("sqlite:" + damaged.string());
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, ErrorCode::kFailedPrecondition) << d.error().ToString();
  EXPECT_EQ(ReadBytes(damaged), fake);
}

TEST(store, SqliteFileSettings) {
  TempDir dir;
  const fs::path file = dir.path() / "deep" / "er" / "tidal.db";  // folders made on demand
  auto store = MustOpen("sqlite:" + file.string());
  ASSERT_TRUE(store);
  EXPECT_TRUE(fs::exists(file));
  EXPECT_EQ(Pragma(*store, "PRAGMA journal_mode"), Value(std::string("wal")));
  EXPECT_EQ(Pragma(*store, "PRAGMA synchronous"), Value(std::int64_t{2}));  // FULL
  EXPECT_EQ(Pragma(*store, "PRAGMA foreign_keys"), Value(std::int64_t{1}));
  OpenOptions relaxed;
  relaxed.durable = false;
  auto fast = MustOpen("sqlite:" + file.string(), relaxed);
  EXPECT_EQ(Pragma(*fast, "PRAGMA synchronous"), Value(std::int64_t{1}));  // NORMAL
  OpenOptions no_create;
  no_create.create = false;
  auto missing = OpenStore("sqlite:" + (dir.path() / "nope.db").string(), no_create);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_FALSE(fs::exists(dir.path() / "nope.db"));
}

TEST(store, MemoryStoresAreSeparate) {
  auto a = MustOpen("sqlite::memory:");
  auto b = MustOpen("sqlite::memory:");
  ASSERT_TRUE(a && b);
  MustWrite(*a, "INSERT INTO tidal_meta (key, value) VALUES ('x', 'y')");
  EXPECT_EQ(CountRows(*a, "tidal_meta"), 3);
  EXPECT_EQ(CountRows(*b, "tidal_meta"), 2);
}

TEST(store, ManyStatementsPerSecond) {
  // The ledger runs ~20k statements a second through Exec: cached statements
  // make that cheap. Generous bound; it catches re-preparing per call only on a
  // quiet machine, so it reports the rate and checks a floor.
  TempDir dir;
  OpenOptions relaxed;
  relaxed.durable = false;
  auto store = MustOpen("sqlite:" + (dir.path() / "speed.db").string(), relaxed);
  ASSERT_TRUE(store);
  MustWrite(*store, "CREATE TABLE t (id BIGINT PRIMARY KEY, a TEXT NOT NULL, n BIGINT NOT NULL)");
  constexpr int kStatements = 20000;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(store->Write([&](Tx& tx) -> Status {
    for (int i = 0; i < kStatements; ++i) {
      const Value p[] = {std::int64_t{i}, std::string("account"), std::int64_t{i * 3}};
      TIDAL_RETURN_IF_ERROR(tx.Exec("INSERT INTO t (id, a, n) VALUES (?, ?, ?)", p));
    }
    return Ok();
  }));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ info ] %d SQLite inserts in %.3f s (%.0f/s)\n", kStatements, seconds, kStatements / seconds);
  EXPECT_LT(seconds, 10.0);
  EXPECT_EQ(CountRows(*store, "t"), kStatements);
}

TEST(store, DefaultStoreUrlFollowsXdg) {
  const char* old_xdg = std::getenv("XDG_DATA_HOME");
  const std::string saved = old_xdg ? old_xdg : "";
  setenv("XDG_DATA_HOME", "/srv/data", 1);
  EXPECT_EQ(DefaultStoreUrl(), "sqlite:/srv/data/tidal/tidal.db");
  setenv("XDG_DATA_HOME", "relative/ignored", 1);
  EXPECT_TRUE(DefaultStoreUrl().ends_with("/.local/share/tidal/tidal.db")) << DefaultStoreUrl();
  if (old_xdg) {
    setenv("XDG_DATA_HOME", saved.c_str(), 1);
  } else {
    unsetenv("XDG_DATA_HOME");
  }
  EXPECT_TRUE(ParseStoreUrl(DefaultStoreUrl()));
}

// --- pieces ----------------------------------------------------------------------

TEST(store, MigrationsAreNumberedInOrder) {
  auto migrations = Migrations();
  ASSERT_FALSE(migrations.empty());
  for (std::size_t i = 0; i < migrations.size(); ++i) {
    EXPECT_EQ(migrations[i].version, static_cast<int>(i + 1));
    EXPECT_FALSE(migrations[i].name.empty());
    EXPECT_FALSE(SplitSqlStatements(migrations[i].SqlFor(Dialect::kSqlite)).empty());
    EXPECT_FALSE(SplitSqlStatements(migrations[i].SqlFor(Dialect::kPostgres)).empty());
  }
  EXPECT_EQ(LatestSchemaVersion(), migrations.back().version);
  EXPECT_EQ(SplitSqlStatements(Migrations()[0].sql).size(), 6u);  // 3 tables, 3 indexes
}

TEST(store, SplitSqlStatements) {
  EXPECT_EQ(SplitSqlStatements("a; b ;\n c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(SplitSqlStatements("INSERT INTO t VALUES ('x;y'); SELECT \"a;b\""),
            (std::vector<std::string>{"INSERT INTO t VALUES ('x;y')", "SELECT \"a;b\""}));
  EXPECT_EQ(SplitSqlStatements("-- c;\nA; /* ; */ B;;  ; -- end"),
            (std::vector<std::string>{"-- c;\nA", "/* ; */ B"}));
  EXPECT_EQ(SplitSqlStatements("SELECT 'it''s;'; X"), (std::vector<std::string>{"SELECT 'it''s;'", "X"}));
  EXPECT_EQ(SplitSqlStatements("DO $$ a; b $$; Y $1;"), (std::vector<std::string>{"DO $$ a; b $$", "Y $1"}));
  EXPECT_TRUE(SplitSqlStatements("  ;\n -- only a comment\n").empty());
}

TEST(store, RewritePlaceholders) {
  int n = -1;
  EXPECT_EQ(RewritePlaceholders("SELECT ?, ?", &n), "SELECT $1, $2");
  EXPECT_EQ(n, 2);
  EXPECT_EQ(RewritePlaceholders("SELECT '?', ? WHERE s = 'it''s ?' AND t = ?", &n),
            "SELECT '?', $1 WHERE s = 'it''s ?' AND t = $2");
  EXPECT_EQ(n, 2);
  EXPECT_EQ(RewritePlaceholders("SELECT \"we?ird\", ? -- why?\n, ? /* a ? /* b ? */ c ? */ , ?", &n),
            "SELECT \"we?ird\", $1 -- why?\n, $2 /* a ? /* b ? */ c ? */ , $3");
  EXPECT_EQ(n, 3);
  EXPECT_EQ(RewritePlaceholders("SELECT E'\\'?', $$?$$, $t$ ? $t$, ?", &n), "SELECT E'\\'?', $$?$$, $t$ ? $t$, $1");
  EXPECT_EQ(n, 1);
  EXPECT_EQ(RewritePlaceholders("SELECT 'unterminated ?", &n), "SELECT 'unterminated ?");
  EXPECT_EQ(n, 0);
}

TEST(store, TypedAccess) {
  const Row row = {std::monostate{}, std::int64_t{42}, std::string("hi")};
  EXPECT_TRUE(IsNull(row, 0));
  EXPECT_FALSE(IsNull(row, 1));
  EXPECT_TRUE(IsNull(row, 9));
  EXPECT_EQ(AsInt(row, 1).value(), 42);
  EXPECT_EQ(AsText(row, 2).value(), "hi");
  EXPECT_NE(AsInt(row, 2).error().message.find("column 2 is text ('hi'), not an integer"), std::string::npos)
      << AsInt(row, 2).error().message;
  EXPECT_NE(AsText(row, 0).error().message.find("column 0 is NULL"), std::string::npos);
  EXPECT_NE(AsInt(row, 3).error().message.find("row with 3 columns"), std::string::npos);
}

}  // namespace
}  // namespace tidal::store
