#include "server/auth.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>

#include <fmt/format.h>

namespace tidal::server {
namespace {

constexpr std::string_view kPrefix = "tidal_";
constexpr size_t kIdLen = 8, kSecretLen = 32;
constexpr std::string_view kAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

bool IsBase62(std::string_view s) {
  for (char c : s)
    if (kAlphabet.find(c) == std::string_view::npos) return false;
  return true;
}

Result<std::string> RandomBase62(size_t n) {
  std::string out;
  while (out.size() < n) {
    std::array<unsigned char, 64> buf{};
    if (RAND_bytes(buf.data(), static_cast<int>(buf.size())) != 1) {
      return MakeError(ErrorCode::kInternal, "the system's random source failed (OpenSSL RAND_bytes)");
    }
    for (unsigned char b : buf) {
      if (b >= 248) continue;  // 248 = 62 x 4: keeps the draw uniform
      out.push_back(kAlphabet[b % 62]);
      if (out.size() == n) break;
    }
  }
  return out;
}

// Splits "tidal_<id>_<secret>"; nullopt when the shape is wrong.
std::optional<std::string_view> IdOf(std::string_view token) {
  if (token.size() != kPrefix.size() + kIdLen + 1 + kSecretLen || !token.starts_with(kPrefix)) return std::nullopt;
  std::string_view id = token.substr(kPrefix.size(), kIdLen);
  if (token[kPrefix.size() + kIdLen] != '_') return std::nullopt;
  if (!IsBase62(id) || !IsBase62(token.substr(kPrefix.size() + kIdLen + 1))) return std::nullopt;
  return id;
}

Result<TokenInfo> InfoOf(const store::Row& row) {
  TokenInfo t;
  TIDAL_ASSIGN_OR_RETURN(t.principal.token_id, store::AsText(row, 0));
  TIDAL_ASSIGN_OR_RETURN(std::string role, store::AsText(row, 1));
  TIDAL_ASSIGN_OR_RETURN(t.principal.role, ParseRole(role));
  TIDAL_ASSIGN_OR_RETURN(t.principal.tenant, store::AsText(row, 2));
  TIDAL_ASSIGN_OR_RETURN(t.principal.name, store::AsText(row, 3));
  TIDAL_ASSIGN_OR_RETURN(t.created_at, store::AsInt(row, 4));
  TIDAL_ASSIGN_OR_RETURN(t.created_by, store::AsText(row, 5));
  if (!store::IsNull(row, 6)) {
    TIDAL_ASSIGN_OR_RETURN(int64_t r, store::AsInt(row, 6));
    t.revoked_at = r;
  }
  return t;
}

constexpr std::string_view kSelect = "SELECT id, role, tenant, name, created_at, created_by, revoked_at FROM api_tokens";

}  // namespace

Result<Role> ParseRole(std::string_view name) {
  if (name == "admin") return Role::kAdmin;
  if (name == "operator") return Role::kOperator;
  if (name == "tenant-admin") return Role::kTenantAdmin;
  if (name == "member") return Role::kMember;
  if (name == "viewer") return Role::kViewer;
  return MakeError(ErrorCode::kInvalidArgument, "unknown role '{}'; roles are admin, operator, tenant-admin, member, viewer", name);
}

const char* RoleName(Role r) {
  switch (r) {
    case Role::kAdmin: return "admin";
    case Role::kOperator: return "operator";
    case Role::kTenantAdmin: return "tenant-admin";
    case Role::kMember: return "member";
    case Role::kViewer: return "viewer";
  }
  return "?";
}

bool IsTenantBound(Role r) { return r == Role::kTenantAdmin || r == Role::kMember; }

bool CanRead(const Principal& p, std::string_view tenant) {
  if (p.role == Role::kAdmin || p.role == Role::kOperator) return true;
  if (p.role == Role::kViewer && p.tenant.empty()) return true;
  return !p.tenant.empty() && p.tenant == tenant;
}

bool CanActFor(const Principal& p, std::string_view tenant) {
  if (p.role == Role::kAdmin) return true;
  if (p.role == Role::kTenantAdmin || p.role == Role::kMember) return !p.tenant.empty() && p.tenant == tenant;
  return false;
}

bool CanCancelAny(const Principal& p) { return p.role == Role::kAdmin || p.role == Role::kOperator; }

bool CanCreateToken(const Principal& p, Role role, std::string_view tenant) {
  if (p.role == Role::kAdmin) return true;
  if (p.role == Role::kTenantAdmin) {
    return (role == Role::kMember || role == Role::kViewer) && !p.tenant.empty() && tenant == p.tenant;
  }
  return false;
}

bool CanManageToken(const Principal& p, const Principal& target) {
  if (p.role == Role::kAdmin) return true;
  if (p.token_id == target.token_id) return true;  // one's own
  return p.role == Role::kTenantAdmin && !p.tenant.empty() && target.tenant == p.tenant &&
         (target.role == Role::kMember || target.role == Role::kViewer);
}

bool CanReadAudit(const Principal& p) { return p.role == Role::kAdmin; }

bool CanOperate(const Principal& p) { return p.role == Role::kAdmin || p.role == Role::kOperator; }

bool CanSetQuota(const Principal& p) { return p.role == Role::kAdmin; }

std::string Sha256Hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md.data(), &len, EVP_sha256(), nullptr);
  std::string out;
  out.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) out += fmt::format("{:02x}", md[i]);
  return out;
}

Result<IssuedToken> TokenStore::Create(Role role, std::string tenant, std::string name, std::string by, int64_t now_s) {
  if (IsTenantBound(role) && tenant.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "a {} token belongs to a tenant: name one", RoleName(role));
  }
  if ((role == Role::kAdmin || role == Role::kOperator) && !tenant.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "an {} token acts on every tenant; leave the tenant out", RoleName(role));
  }
  if (name.size() > 128) return MakeError(ErrorCode::kInvalidArgument, "a token's name has at most 128 bytes");
  IssuedToken t{.principal = {.role = role, .tenant = std::move(tenant), .name = std::move(name)}, .created_at = now_s};
  TIDAL_ASSIGN_OR_RETURN(t.principal.token_id, RandomBase62(kIdLen));
  TIDAL_ASSIGN_OR_RETURN(std::string secret, RandomBase62(kSecretLen));
  t.token = fmt::format("{}{}_{}", kPrefix, t.principal.token_id, secret);
  const std::string hash = Sha256Hex(t.token);
  TIDAL_RETURN_IF_ERROR(store_.Write([&](store::Tx& tx) -> Status {
    const store::Value params[] = {t.principal.token_id, hash, std::string(RoleName(role)), t.principal.tenant,
                                   t.principal.name,     now_s, by};
    TIDAL_ASSIGN_OR_RETURN(int64_t n, tx.Exec("INSERT INTO api_tokens (id, hash, role, tenant, name, created_at, created_by, "
                                              "revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, NULL) ON CONFLICT DO NOTHING",
                                              params));
    if (n != 1) return MakeError(ErrorCode::kInternal, "token id {} collided; create it again", t.principal.token_id);
    return Ok();
  }));
  return t;
}

Result<Principal> TokenStore::Authenticate(std::string_view token, int64_t now_s) {
  if (!IdOf(token)) return MakeError(ErrorCode::kNotFound, "the token is malformed; tokens read tidal_<id>_<secret>");
  // The cache is keyed by the presented token (it lives only in this
  // process's memory): a hit costs a lookup, not a SHA-256.
  const std::string key(token);
  {
    std::shared_lock read(mu_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      Cached& c = it->second;
      if (c.until > now_s || c.refreshing.exchange(true)) return c.principal;
      // This request refreshes it (below); the others go on with the entry.
    }
  }
  const std::string hash = Sha256Hex(token);
  std::optional<TokenInfo> info;
  Status read = store_.Read([&](store::Tx& tx) -> Status {
    const store::Value params[] = {hash};
    TIDAL_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(std::string(kSelect) + " WHERE hash = ?", params));
    if (!rows.rows.empty()) {
      TIDAL_ASSIGN_OR_RETURN(TokenInfo t, InfoOf(rows.rows[0]));
      info = std::move(t);
    }
    return Ok();
  });
  std::lock_guard lock(mu_);
  if (!read) {
    if (auto it = cache_.find(key); it != cache_.end()) it->second.refreshing = false;  // the next request tries again
    return std::unexpected(read.error());
  }
  if (!info || info->revoked_at) {
    cache_.erase(key);
    return MakeError(ErrorCode::kNotFound, "the token is unknown or revoked");
  }
  if (cache_.size() > 10000) cache_.clear();
  Cached& c = cache_[key];
  c.principal = info->principal;
  c.until = now_s + kTokenCacheSeconds;
  c.refreshing = false;
  return info->principal;
}

Result<std::vector<TokenInfo>> TokenStore::List() {
  std::vector<TokenInfo> out;
  TIDAL_RETURN_IF_ERROR(store_.Read([&](store::Tx& tx) -> Status {
    TIDAL_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(std::string(kSelect) + " ORDER BY created_at, id"));
    for (const store::Row& r : rows.rows) {
      TIDAL_ASSIGN_OR_RETURN(TokenInfo t, InfoOf(r));
      out.push_back(std::move(t));
    }
    return Ok();
  }));
  return out;
}

Result<TokenInfo> TokenStore::Get(std::string_view id) {
  std::optional<TokenInfo> info;
  TIDAL_RETURN_IF_ERROR(store_.Read([&](store::Tx& tx) -> Status {
    const store::Value params[] = {std::string(id)};
    TIDAL_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(std::string(kSelect) + " WHERE id = ?", params));
    if (!rows.rows.empty()) {
      TIDAL_ASSIGN_OR_RETURN(TokenInfo t, InfoOf(rows.rows[0]));
      info = std::move(t);
    }
    return Ok();
  }));
  if (!info) return MakeError(ErrorCode::kNotFound, "no token with id '{}'", id);
  return *info;
}

Status TokenStore::Revoke(std::string_view id, int64_t now_s) {
  TIDAL_RETURN_IF_ERROR(store_.Write([&](store::Tx& tx) -> Status {
    const store::Value params[] = {now_s, std::string(id)};
    TIDAL_ASSIGN_OR_RETURN(int64_t n, tx.Exec("UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", params));
    if (n == 0) return MakeError(ErrorCode::kNotFound, "no live token with id '{}'", id);
    return Ok();
  }));
  std::lock_guard lock(mu_);
  cache_.clear();  // revocation takes effect now in this process (others within kTokenCacheSeconds)
  return Ok();
}

Result<int64_t> TokenStore::Count() {
  int64_t n = 0;
  TIDAL_RETURN_IF_ERROR(store_.Read([&](store::Tx& tx) -> Status {
    TIDAL_ASSIGN_OR_RETURN(store::Rows rows, tx.Query("SELECT COUNT(*) FROM api_tokens"));
    TIDAL_ASSIGN_OR_RETURN(n, store::AsInt(rows.rows.at(0), 0));
    return Ok();
  }));
  return n;
}

}  // namespace tidal::server
