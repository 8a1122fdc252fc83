// API tokens and what each role may do (docs/server-api.md, "Roles").
//
// A token reads "tidal_<id>_<secret>": <id> is 8 base-62 characters that
// name it in lists, the audit log and revocation; <secret> 32 more (190
// bits). The store keeps only the SHA-256 of the whole token, so a copy of
// the store cannot be replayed as credentials. The recognisable prefix lets
// secret scanners find leaked tokens.
#pragma once

#include <cstdint>
#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "server/api_error.h"
#include "store/store.h"

namespace tidal::server {

enum class Role { kAdmin, kOperator, kTenantAdmin, kMember, kViewer };
Result<Role> ParseRole(std::string_view name);
const char* RoleName(Role r);

struct Principal {
  std::string token_id;
  Role role = Role::kViewer;
  std::string tenant;  // "" = not bound to one (admin, operator, a cluster-wide viewer)
  std::string name;
};

// --- What a principal may do (pure; tested against a table) ---------------
// Read the objects of `tenant` (jobs, account, quota).
bool CanRead(const Principal& p, std::string_view tenant);
// Submit or cancel `tenant`'s jobs; run what-ifs for it.
bool CanActFor(const Principal& p, std::string_view tenant);
// Cancel any tenant's job (operators).
bool CanCancelAny(const Principal& p);
// Create a token of `role` for `tenant`.
bool CanCreateToken(const Principal& p, Role role, std::string_view tenant);
// See and revoke the token `target`.
bool CanManageToken(const Principal& p, const Principal& target);
bool CanReadAudit(const Principal& p);
// Drain nodes and return them to service (admins, operators).
bool CanOperate(const Principal& p);
// Change tenants' quotas (admins).
bool CanSetQuota(const Principal& p);
bool IsTenantBound(Role r);  // tenant-admin, member: must name a tenant; admin, operator: must not

std::string Sha256Hex(std::string_view data);

struct IssuedToken {
  Principal principal;
  std::string token;  // shown once
  int64_t created_at = 0;
};

struct TokenInfo {
  Principal principal;
  int64_t created_at = 0;
  std::string created_by;
  std::optional<int64_t> revoked_at;
};

// The tokens in the store, with a short-lived cache of verified ones so the
// read path does not touch the store for each request.
class TokenStore {
 public:
  explicit TokenStore(store::Store& store) : store_(store) {}

  // A new token; `by` is the creator's token id ("cli" from the command line).
  Result<IssuedToken> Create(Role role, std::string tenant, std::string name, std::string by, int64_t now_s);
  // The principal of a presented token; kNotFound for unknown, malformed or
  // revoked ones. `now_s` is the wall clock (cache expiry).
  Result<Principal> Authenticate(std::string_view token, int64_t now_s);
  Result<std::vector<TokenInfo>> List();
  Result<TokenInfo> Get(std::string_view id);
  // Revokes by id; kNotFound if there is no such live token.
  Status Revoke(std::string_view id, int64_t now_s);
  // How many tokens (any state) exist: 0 on a fresh store.
  Result<int64_t> Count();

 private:
  store::Store& store_;
  std::shared_mutex mu_;  // readers of a fresh entry share it
  struct Cached {
    Principal principal;
    int64_t until = 0;  // fresh until then (written under the exclusive lock)
    // After `until`, the one request that flips this re-reads the store;
    // the others keep using the entry meanwhile, under the shared lock.
    std::atomic<bool> refreshing{false};
  };
  std::unordered_map<std::string, Cached> cache_;  // by presented token
};

// A verified token is trusted from the cache for this long; then the next
// request re-reads it from the store while concurrent ones keep using the
// cached entry (so a cache expiry never stalls a burst of requests behind
// the store). Revocation here clears the cache at once; a revocation by
// another process (`tidal token revoke`) takes effect within this time.
inline constexpr int64_t kTokenCacheSeconds = 5;

}  // namespace tidal::server
