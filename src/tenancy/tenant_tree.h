// The tenant tree and its quotas: organisation -> business group -> team (any
// depth), each node with, per resource, a guaranteed (nominal) quota, an
// optional borrowing limit and an optional lending limit — with exactly the
// semantics of Kueue's hierarchical cohorts (pkg/cache/resource_node.go),
// written down in docs/tenancy.md and tested against its table:
//
//   subtree(n)    = nominal(n) + sum over children c of (subtree(c) - guaranteed(c))
//   guaranteed(n) = max(0, subtree(n) - lending_limit(n)), 0 without a lending limit
//                   (the part of n's quota it never lends to its parent)
//   usage(inner)  = sum over children c of max(0, usage(c) - guaranteed(c))
//   available(root) = subtree(root) - usage(root)
//   available(n)    = max(0, guaranteed(n) - usage(n))
//                     + min(available(parent),
//                           subtree(n) - guaranteed(n) - max(0, usage(n) - guaranteed(n))
//                             + borrowing_limit(n))     [the min only with a borrowing limit]
//
// A request fits a tenant iff, for every resource, request <= available.
// It "fits in its own quota" iff usage + request <= subtree for every
// resource (no borrowing). A tenant is *borrowing* when usage > subtree in
// some resource; only borrowing tenants' jobs can be taken by another
// tenant's reclaim.
//
// Quantities are integers in the resource's unit: milli-GPU for "gpu" and
// "gpu/<MODEL>", milli-CPU for "cpu", MiB for "memory".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"

namespace tidal::tenancy {

using TenantId = int32_t;
using ResourceId = int32_t;
inline constexpr TenantId kNoTenant = -1;

// QoS tiers across the cluster: `guaranteed` jobs run only within their
// tenant's floor and are never preempted by another tenant; `standard` jobs
// may borrow and are reclaimable while their tenant borrows; `spot` jobs run
// on anything idle and are the first victims of anyone.
enum class Tier { kGuaranteed, kStandard, kSpot };
Result<Tier> ParseTier(std::string_view name);
const char* TierName(Tier t);

struct Quota {
  int64_t nominal = 0;
  std::optional<int64_t> borrowing_limit;  // none: may borrow anything the parent has
  std::optional<int64_t> lending_limit;    // none: lends all of its idle quota
};

struct TenantSpec {
  std::string name;
  std::string parent;   // "" for the root
  double weight = 1;    // fair-share weight (> 0)
  Tier tier = Tier::kStandard;  // default tier of the tenant's jobs
  std::vector<std::string> groups;  // trace group values mapped to this tenant (besides its name)
  std::vector<std::pair<std::string, Quota>> quotas;  // by resource name
  std::string source;   // "file:line", for messages
};

// What a job asks of the quota, resource by resource.
using QuotaRequest = std::vector<std::pair<ResourceId, int64_t>>;

class TenantTree {
 public:
  // Validates and builds: unique names, every parent exists, no cycle, one
  // root, quotas and limits >= 0 and below 2^50, lending limit <= nominal,
  // weight > 0. Errors name the tenant and its source line.
  static Result<TenantTree> Build(std::vector<TenantSpec> specs);

  // A copy with `tenant`'s quota on `resource` replaced (a quota change of a
  // running system): the same tenants, ids and resources, usage zero (the
  // caller adds the running jobs back). `tenant` is a name, not a group
  // alias; the resource must already be in the tree (a new one would
  // renumber the resources running jobs' requests refer to). Errors are
  // Build's (a lending limit above the floor, out-of-range values), plus an
  // unknown tenant or resource.
  Result<TenantTree> WithQuota(std::string_view tenant, std::string_view resource, const Quota& quota) const;

  int32_t size() const { return static_cast<int32_t>(nodes_.size()); }
  TenantId root() const { return root_; }
  TenantId Find(std::string_view name) const;       // by name or group alias; kNoTenant
  const std::string& name(TenantId t) const { return nodes_[Idx(t)].spec.name; }
  const TenantSpec& spec(TenantId t) const { return nodes_[Idx(t)].spec; }
  TenantId parent(TenantId t) const { return nodes_[Idx(t)].parent; }
  const std::vector<TenantId>& children(TenantId t) const { return nodes_[Idx(t)].children; }
  bool is_leaf(TenantId t) const { return children(t).empty(); }
  std::vector<TenantId> Leaves() const;
  int32_t depth(TenantId t) const;

  int32_t num_resources() const { return static_cast<int32_t>(resources_.size()); }
  const std::string& resource_name(ResourceId r) const { return resources_[static_cast<size_t>(r)]; }
  std::optional<ResourceId> resource(std::string_view name) const;

  int64_t nominal(TenantId t, ResourceId r) const { return Q(t, r).nominal; }
  const Quota& quota(TenantId t, ResourceId r) const { return Q(t, r); }
  int64_t subtree(TenantId t, ResourceId r) const { return At(subtree_, t, r); }
  int64_t guaranteed(TenantId t, ResourceId r) const;
  int64_t usage(TenantId t, ResourceId r) const { return At(usage_, t, r); }
  int64_t Available(TenantId t, ResourceId r) const;
  // The most t could ever hold with nothing else running (Kueue's
  // potentialAvailable): a request above it can never be admitted.
  int64_t PotentialAvailable(TenantId t, ResourceId r) const;

  bool Fits(TenantId t, const QuotaRequest& req) const;
  bool FitsOwnQuota(TenantId t, const QuotaRequest& req) const;
  bool Borrowing(TenantId t) const;
  // Borrowing in the resources `req` names (what a reclaim for `req` may take back).
  bool BorrowingIn(TenantId t, const QuotaRequest& req) const;

  // Usage bubbles up past each node's guaranteed quota (Kueue's addUsage /
  // removeUsage). Remove must mirror an earlier Add.
  void Add(TenantId t, const QuotaRequest& req);
  void Remove(TenantId t, const QuotaRequest& req);
  // Recomputes the inner nodes' usage from the leaves (for invariant checks).
  std::vector<int64_t> RecountUsage() const;
  const std::vector<int64_t>& raw_usage() const { return usage_; }

 private:
  struct Node {
    TenantSpec spec;
    TenantId parent = kNoTenant;
    std::vector<TenantId> children;
    std::vector<Quota> quota;  // per resource
  };
  static Result<TenantTree> BuildOrdered(std::vector<TenantSpec> specs, const std::vector<std::string>& resources);
  static size_t Idx(TenantId t) { return static_cast<size_t>(t); }
  const Quota& Q(TenantId t, ResourceId r) const { return nodes_[Idx(t)].quota[static_cast<size_t>(r)]; }
  size_t Cell(TenantId t, ResourceId r) const { return Idx(t) * resources_.size() + static_cast<size_t>(r); }
  int64_t At(const std::vector<int64_t>& v, TenantId t, ResourceId r) const { return v[Cell(t, r)]; }
  void AddUsage(TenantId t, ResourceId r, int64_t v);
  void RemoveUsage(TenantId t, ResourceId r, int64_t v);

  std::vector<Node> nodes_;
  std::vector<std::string> resources_;
  std::unordered_map<std::string, TenantId> by_name_;
  TenantId root_ = kNoTenant;
  std::vector<int64_t> subtree_, usage_;  // [tenant][resource]
};

}  // namespace tidal::tenancy
