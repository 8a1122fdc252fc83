// The store's schema: numbered migrations applied in order on open, the
// version recorded in tidal_meta. Rules (docs/store.md):
//   - a released migration is never edited; a change is a new migration;
//   - each migration runs in its own write transaction together with the
//     schema_version bump, so a store is always at exactly one version;
//   - SQL is written once for both backends (BIGINT, TEXT, portable DDL); the
//     rare difference goes in a per-backend override.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "store/internal.h"
#include "store/store.h"

namespace tidal::store {

enum class Dialect { kSqlite, kPostgres };

struct Migration {
  int version = 0;
  std::string_view name;
  std::string_view sql;           // for both backends, unless overridden
  std::string_view sqlite_sql;    // non-empty: used on SQLite instead of sql
  std::string_view postgres_sql;  // non-empty: used on PostgreSQL instead of sql

  std::string_view SqlFor(Dialect dialect) const;
};

// All migrations, version 1, 2, ... in order.
std::span<const Migration> Migrations();

// Splits a script at each ';' outside quotes and comments; empty statements
// (only whitespace or comments) are dropped.
std::vector<std::string> SplitSqlStatements(std::string_view sql);

// What a database holds, as far as opening it as a tidal store goes.
struct StoreState {
  std::vector<std::string> tables;  // user tables and views, sorted, tidal_meta included
  bool has_meta = false;            // tidal_meta exists
  std::string app;                  // tidal_meta 'app' ("" when missing)
  int version = 0;                  // tidal_meta 'schema_version' (0 without tidal_meta)
};

Result<StoreState> InspectStore(Tx& tx, Dialect dialect, std::string_view display_url);

// Ok when the store may be opened (and migrated) by this binary: an empty
// database (when create is set), or a tidal store at or below
// LatestSchemaVersion(). Otherwise says why not: not a tidal store (the tables
// found), a newer schema, or (create unset) no store yet.
Status CheckStoreState(const StoreState& state, std::string_view display_url, bool create);

// Brings the store to LatestSchemaVersion(), one migration per
// WriteExclusive transaction (which re-inspects the store first, so a
// concurrent opener that got there first is noticed). Returns the version.
Result<int> MigrateStore(internal::MigratingStore& store, Dialect dialect, bool create);

}  // namespace tidal::store
