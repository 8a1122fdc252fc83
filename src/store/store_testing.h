// Test support: a fresh, empty store on each backend — a SQLite file in a
// temporary folder, or a new database on the PostgreSQL server named by
// TIDAL_TEST_POSTGRES_URL (scripts/pg-test-server.sh start prints one; the
// test scripts start one). Linked only into tests.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "store/store.h"

namespace tidal::store::testing {

enum class Backend { kSqlite, kPostgres };

std::vector<Backend> AllBackends();
std::string BackendName(Backend b);

// An empty store that removes itself (file or database) when destroyed.
class TestStore {
 public:
  virtual ~TestStore() = default;
  Store& store() { return *store_; }
  const std::string& url() const { return url_; }
  // Closes and opens the store again, as a restarted process would.
  Status Reopen(const OpenOptions& options = {});

 protected:
  std::string url_;
  std::unique_ptr<Store> store_;
};

// The error (kFailedPrecondition) says why the backend is not available — a
// test skips with that message.
Result<std::unique_ptr<TestStore>> FreshStore(Backend backend, const OpenOptions& options = {});

// The PostgreSQL server URL for tests, or empty when TIDAL_TEST_POSTGRES_URL is unset.
std::string PostgresServerUrl();
// `url` with its database replaced by `dbname` (libpq URI or key=value form).
std::string WithDatabase(const std::string& url, const std::string& dbname);

}  // namespace tidal::store::testing
