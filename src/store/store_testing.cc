#include "store/store_testing.h"

#include <atomic>
#include <cstdlib>
#include <random>
#include <system_error>
#include <unistd.h>

#include <pqxx/pqxx>

namespace tidal::store::testing {
namespace {

std::string UniqueSuffix() {
  static std::atomic<int> counter{0};
  std::random_device rd;
  return fmt::format("{}_{}_{:08x}", ::getpid(), counter++, rd());
}

class SqliteTestStore : public TestStore {
 public:
  ~SqliteTestStore() override {
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  static Result<std::unique_ptr<TestStore>> Make(const OpenOptions& options) {
    auto t = std::make_unique<SqliteTestStore>();
    t->dir_ = std::filesystem::temp_directory_path() / ("tidal-store-test-" + UniqueSuffix());
    std::error_code ec;
    std::filesystem::create_directories(t->dir_, ec);
    if (ec) return MakeError(ErrorCode::kIo, "cannot create {}: {}", t->dir_.string(), ec.message());
    t->url_ = "sqlite:" + (t->dir_ / "tidal.db").string();
    TIDAL_ASSIGN_OR_RETURN(t->store_, OpenStore(t->url_, options));
    return std::unique_ptr<TestStore>(std::move(t));
  }

 private:
  std::filesystem::path dir_;
};

class PostgresTestStore : public TestStore {
 public:
  ~PostgresTestStore() override {
    store_.reset();
    try {
      pqxx::connection c(server_);
      pqxx::nontransaction n(c);
      n.exec("DROP DATABASE IF EXISTS " + dbname_ + " WITH (FORCE)");
    } catch (const std::exception&) {
      // Best effort: a throwaway server is removed with its folder anyway.
    }
  }
  static Result<std::unique_ptr<TestStore>> Make(const OpenOptions& options) {
    auto t = std::make_unique<PostgresTestStore>();
    t->server_ = PostgresServerUrl();
    if (t->server_.empty())
      return MakeError(ErrorCode::kFailedPrecondition,
                       "PostgreSQL tests skipped: set TIDAL_TEST_POSTGRES_URL to a server "
                       "(`scripts/pg-test-server.sh start DIR` starts a throwaway one and prints its URL; "
                       "scripts/test.sh does this by itself)");
    t->dbname_ = "tidal_test_" + UniqueSuffix();
    try {
      pqxx::connection c(t->server_);
      pqxx::nontransaction n(c);
      n.exec("CREATE DATABASE " + t->dbname_);
    } catch (const std::exception& e) {
      return MakeError(ErrorCode::kFailedPrecondition, "cannot create a test database on {}: {}", t->server_,
                       e.what());
    }
    t->url_ = WithDatabase(t->server_, t->dbname_);
    TIDAL_ASSIGN_OR_RETURN(t->store_, OpenStore(t->url_, options));
    return std::unique_ptr<TestStore>(std::move(t));
  }

 private:
  std::string server_;
  std::string dbname_;
};

}  // namespace

std::vector<Backend> AllBackends() { return {Backend::kSqlite, Backend::kPostgres}; }

std::string BackendName(Backend b) { return b == Backend::kSqlite ? "sqlite" : "postgresql"; }

std::string PostgresServerUrl() {
  const char* v = std::getenv("TIDAL_TEST_POSTGRES_URL");
  return v ? std::string(v) : std::string();
}

std::string WithDatabase(const std::string& url, const std::string& dbname) {
  if (url.starts_with("postgresql://") || url.starts_with("postgres://")) {
    // libpq reads query parameters after the path, so dbname= here wins.
    return url + (url.find('?') == std::string::npos ? "?" : "&") + "dbname=" + dbname;
  }
  return url + " dbname=" + dbname;  // key=value form: the last value wins
}

Status TestStore::Reopen(const OpenOptions& options) {
  store_.reset();
  TIDAL_ASSIGN_OR_RETURN(store_, OpenStore(url_, options));
  return Ok();
}

Result<std::unique_ptr<TestStore>> FreshStore(Backend backend, const OpenOptions& options) {
  return backend == Backend::kSqlite ? SqliteTestStore::Make(options) : PostgresTestStore::Make(options);
}

}  // namespace tidal::store::testing
