#include "tenancy/tenant_tree.h"

#include <algorithm>
#include <map>
#include <set>

namespace tidal::tenancy {
namespace {

constexpr int64_t kMaxQuantity = int64_t{1} << 50;  // sums of 2^13 tenants stay far below 2^63

std::string Where(const TenantSpec& s) { return s.source.empty() ? std::string("tenant '" + s.name + "'") : s.source; }

}  // namespace

Result<Tier> ParseTier(std::string_view name) {
  if (name == "guaranteed") return Tier::kGuaranteed;
  if (name == "standard") return Tier::kStandard;
  if (name == "spot") return Tier::kSpot;
  return MakeError(ErrorCode::kInvalidArgument, "unknown tier '{}'; choose guaranteed, standard or spot", name);
}

const char* TierName(Tier t) {
  switch (t) {
    case Tier::kGuaranteed:
      return "guaranteed";
    case Tier::kStandard:
      return "standard";
    case Tier::kSpot:
      return "spot";
  }
  return "?";
}

Result<TenantTree> TenantTree::WithQuota(std::string_view tenant, std::string_view resource, const Quota& quota) const {
  auto it = by_name_.find(std::string(tenant));
  if (it == by_name_.end() || nodes_[Idx(it->second)].spec.name != tenant) {
    return MakeError(ErrorCode::kNotFound, "no tenant '{}' in the tenant tree", tenant);
  }
  if (!this->resource(resource)) {
    std::string known;
    for (const std::string& r : resources_) known += (known.empty() ? "" : ", ") + r;
    return MakeError(ErrorCode::kInvalidArgument,
                     "the tenant tree has no quota on resource '{}' (it has: {}); a new resource is added in the tenants "
                     "file, not by a quota change",
                     resource, known);
  }
  std::vector<TenantSpec> specs;
  specs.reserve(nodes_.size());
  for (const Node& n : nodes_) specs.push_back(n.spec);
  TenantSpec& s = specs[Idx(it->second)];
  auto q = std::find_if(s.quotas.begin(), s.quotas.end(), [&](const auto& p) { return p.first == resource; });
  if (q != s.quotas.end()) q->second = quota;
  else s.quotas.emplace_back(std::string(resource), quota);
  // Resources keep their numbers (running jobs' requests refer to them).
  TIDAL_ASSIGN_OR_RETURN(TenantTree t, BuildOrdered(std::move(specs), resources_));
  if (t.resources_ != resources_) return MakeError(ErrorCode::kInternal, "a quota change renumbered the resources");
  return t;
}

Result<TenantTree> TenantTree::Build(std::vector<TenantSpec> specs) { return BuildOrdered(std::move(specs), {}); }

Result<TenantTree> TenantTree::BuildOrdered(std::vector<TenantSpec> specs, const std::vector<std::string>& resources) {
  TenantTree t;
  if (specs.empty()) return MakeError(ErrorCode::kInvalidArgument, "the tenant list is empty; give at least one tenant");
  // Resources: `resources` first, then the others in first-seen order.
  std::map<std::string, ResourceId> res;
  for (const std::string& name : resources) {
    res.emplace(name, static_cast<ResourceId>(t.resources_.size()));
    t.resources_.push_back(name);
  }
  for (const TenantSpec& s : specs) {
    for (const auto& [name, q] : s.quotas) {
      if (name.empty()) return MakeError(ErrorCode::kInvalidArgument, "{}: a quota has an empty resource name", Where(s));
      if (!res.contains(name)) {
        res.emplace(name, static_cast<ResourceId>(t.resources_.size()));
        t.resources_.push_back(name);
      }
    }
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const TenantSpec& s = specs[i];
    if (s.name.empty()) return MakeError(ErrorCode::kInvalidArgument, "{}: a tenant has no name", Where(s));
    if (!(s.weight > 0) || s.weight > 1e6) {
      return MakeError(ErrorCode::kInvalidArgument, "{}: tenant '{}' has weight {}; weights are in (0, 1e6]", Where(s),
                       s.name, s.weight);
    }
    for (const std::string& key : [&] {
           std::vector<std::string> k = s.groups;
           k.push_back(s.name);
           return k;
         }()) {
      if (!t.by_name_.emplace(key, static_cast<TenantId>(i)).second) {
        return MakeError(ErrorCode::kInvalidArgument, "{}: tenant or group name '{}' is used twice; names must be unique",
                         Where(s), key);
      }
    }
  }
  std::set<std::string> parents;
  for (const TenantSpec& s : specs)
    if (!s.parent.empty()) parents.insert(s.parent);
  t.nodes_.resize(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    Node& n = t.nodes_[i];
    n.spec = std::move(specs[i]);
    n.quota.assign(t.resources_.size(), Quota{});
    for (const auto& [name, q] : n.spec.quotas) {
      auto bad = [&](const char* what, int64_t v) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "{}: tenant '{}' resource '{}': {} {} is out of range [0, 2^50); quotas are non-negative",
                         Where(n.spec), n.spec.name, name, what, v);
      };
      if (q.nominal < 0 || q.nominal >= kMaxQuantity) return bad("nominal", q.nominal);
      if (q.borrowing_limit && (*q.borrowing_limit < 0 || *q.borrowing_limit >= kMaxQuantity)) return bad("borrowing_limit", *q.borrowing_limit);
      if (q.lending_limit && (*q.lending_limit < 0 || *q.lending_limit >= kMaxQuantity)) return bad("lending_limit", *q.lending_limit);
      // A leaf lends at most its nominal quota; an inner tenant's lending
      // limit is checked against its subtree's quota below (Kueue checks
      // ClusterQueues only).
      if (!parents.contains(n.spec.name) && q.lending_limit && *q.lending_limit > q.nominal) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "{}: tenant '{}' resource '{}': lending_limit {} is above its nominal quota {}; a tenant "
                         "can lend at most what it has",
                         Where(n.spec), n.spec.name, name, *q.lending_limit, q.nominal);
      }
      n.quota[static_cast<size_t>(res.at(name))] = q;
    }
  }
  for (size_t i = 0; i < t.nodes_.size(); ++i) {
    Node& n = t.nodes_[i];
    if (n.spec.parent.empty()) {
      if (t.root_ != kNoTenant) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "{}: tenants '{}' and '{}' both have no parent; give the tree one root (the organisation)",
                         Where(n.spec), t.nodes_[Idx(t.root_)].spec.name, n.spec.name);
      }
      t.root_ = static_cast<TenantId>(i);
      continue;
    }
    auto p = t.by_name_.find(n.spec.parent);
    if (p == t.by_name_.end() || t.nodes_[Idx(p->second)].spec.name != n.spec.parent) {
      return MakeError(ErrorCode::kNotFound, "{}: tenant '{}' names parent '{}', which is not a tenant", Where(n.spec),
                       n.spec.name, n.spec.parent);
    }
    n.parent = p->second;
  }
  // Cycle: walking up from any node must reach the root within size() steps.
  for (size_t i = 0; i < t.nodes_.size(); ++i) {
    TenantId cur = static_cast<TenantId>(i);
    for (size_t steps = 0; cur != kNoTenant; ++steps) {
      if (steps > t.nodes_.size()) {
        return MakeError(ErrorCode::kInvalidArgument, "{}: tenant '{}' is its own ancestor (the parents form a cycle)",
                         Where(t.nodes_[i].spec), t.nodes_[i].spec.name);
      }
      cur = t.nodes_[Idx(cur)].parent;
    }
  }
  if (t.root_ == kNoTenant) return MakeError(ErrorCode::kInvalidArgument, "every tenant has a parent; the tree needs a root");
  for (size_t i = 0; i < t.nodes_.size(); ++i)
    if (t.nodes_[i].parent != kNoTenant) t.nodes_[Idx(t.nodes_[i].parent)].children.push_back(static_cast<TenantId>(i));

  // Subtree quotas, children before parents (post-order).
  const size_t nr = t.resources_.size();
  t.subtree_.assign(t.nodes_.size() * nr, 0);
  t.usage_.assign(t.nodes_.size() * nr, 0);
  std::vector<TenantId> order;  // pre-order
  std::vector<TenantId> stack = {t.root_};
  while (!stack.empty()) {
    const TenantId x = stack.back();
    stack.pop_back();
    order.push_back(x);
    for (TenantId c : t.nodes_[Idx(x)].children) stack.push_back(c);
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    for (size_t r = 0; r < nr; ++r) {
      const auto rid = static_cast<ResourceId>(r);
      int64_t s = t.Q(*it, rid).nominal;
      for (TenantId c : t.nodes_[Idx(*it)].children) s += t.subtree(c, rid) - t.guaranteed(c, rid);
      if (s >= kMaxQuantity) {
        return MakeError(ErrorCode::kInvalidArgument, "{}: tenant '{}' resource '{}': the subtree's quota {} overflows 2^50",
                         Where(t.nodes_[Idx(*it)].spec), t.nodes_[Idx(*it)].spec.name, t.resources_[r], s);
      }
      t.subtree_[t.Cell(*it, rid)] = s;
      const Quota& q = t.Q(*it, rid);
      if (!t.is_leaf(*it) && q.lending_limit && *q.lending_limit > s) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "{}: tenant '{}' resource '{}': lending_limit {} is above its subtree's quota {}; a tenant "
                         "can lend at most what it has",
                         Where(t.nodes_[Idx(*it)].spec), t.nodes_[Idx(*it)].spec.name, t.resources_[r], *q.lending_limit, s);
      }
    }
  }
  return t;
}

TenantId TenantTree::Find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? kNoTenant : it->second;
}

std::vector<TenantId> TenantTree::Leaves() const {
  std::vector<TenantId> out;
  for (TenantId t = 0; t < size(); ++t)
    if (is_leaf(t)) out.push_back(t);
  return out;
}

int32_t TenantTree::depth(TenantId t) const {
  int32_t d = 0;
  for (TenantId p = parent(t); p != kNoTenant; p = parent(p)) ++d;
  return d;
}

std::optional<ResourceId> TenantTree::resource(std::string_view name) const {
  for (size_t r = 0; r < resources_.size(); ++r)
    if (resources_[r] == name) return static_cast<ResourceId>(r);
  return std::nullopt;
}

int64_t TenantTree::guaranteed(TenantId t, ResourceId r) const {
  const Quota& q = Q(t, r);
  return q.lending_limit ? std::max<int64_t>(0, subtree(t, r) - *q.lending_limit) : 0;
}

int64_t TenantTree::Available(TenantId t, ResourceId r) const {
  const int64_t u = usage(t, r);
  if (parent(t) == kNoTenant) return subtree(t, r) - u;
  const int64_t g = guaranteed(t, r);
  int64_t from_parent = Available(parent(t), r);
  if (const auto& bl = Q(t, r).borrowing_limit) {
    const int64_t stored = subtree(t, r) - g;
    const int64_t used = std::max<int64_t>(0, u - g);
    from_parent = std::min(from_parent, stored - used + *bl);
  }
  return std::max<int64_t>(0, g - u) + from_parent;
}

int64_t TenantTree::PotentialAvailable(TenantId t, ResourceId r) const {
  if (parent(t) == kNoTenant) return subtree(t, r);
  int64_t a = guaranteed(t, r) + PotentialAvailable(parent(t), r);
  if (const auto& bl = Q(t, r).borrowing_limit) a = std::min(a, subtree(t, r) + *bl);
  return a;
}

bool TenantTree::Fits(TenantId t, const QuotaRequest& req) const {
  for (const auto& [r, v] : req)
    if (v > Available(t, r)) return false;
  return true;
}

bool TenantTree::FitsOwnQuota(TenantId t, const QuotaRequest& req) const {
  for (const auto& [r, v] : req)
    if (usage(t, r) + v > subtree(t, r)) return false;
  return true;
}

bool TenantTree::Borrowing(TenantId t) const {
  for (ResourceId r = 0; r < num_resources(); ++r)
    if (usage(t, r) > subtree(t, r)) return true;
  return false;
}

bool TenantTree::BorrowingIn(TenantId t, const QuotaRequest& req) const {
  for (const auto& [r, v] : req)
    if (v > 0 && usage(t, r) > subtree(t, r)) return true;
  return false;
}

void TenantTree::AddUsage(TenantId t, ResourceId r, int64_t v) {
  const int64_t local = std::max<int64_t>(0, guaranteed(t, r) - usage(t, r));
  usage_[Cell(t, r)] += v;
  if (parent(t) != kNoTenant && v > local) AddUsage(parent(t), r, v - local);
}

void TenantTree::RemoveUsage(TenantId t, ResourceId r, int64_t v) {
  const int64_t stored = usage(t, r) - guaranteed(t, r);
  usage_[Cell(t, r)] -= v;
  if (stored <= 0 || parent(t) == kNoTenant) return;
  RemoveUsage(parent(t), r, std::min(v, stored));
}

void TenantTree::Add(TenantId t, const QuotaRequest& req) {
  for (const auto& [r, v] : req)
    if (v != 0) AddUsage(t, r, v);
}

void TenantTree::Remove(TenantId t, const QuotaRequest& req) {
  for (const auto& [r, v] : req)
    if (v != 0) RemoveUsage(t, r, v);
}

std::vector<int64_t> TenantTree::RecountUsage() const {
  const size_t nr = resources_.size();
  std::vector<int64_t> u(usage_.size(), 0);
  // Leaves keep their own usage; inner nodes sum children's past guaranteed.
  std::vector<TenantId> order, stack = {root_};
  while (!stack.empty()) {
    const TenantId x = stack.back();
    stack.pop_back();
    order.push_back(x);
    for (TenantId c : children(x)) stack.push_back(c);
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    for (size_t r = 0; r < nr; ++r) {
      const auto rid = static_cast<ResourceId>(r);
      if (is_leaf(*it)) {
        u[Cell(*it, rid)] = usage(*it, rid);
        continue;
      }
      int64_t s = 0;
      for (TenantId c : children(*it)) s += std::max<int64_t>(0, u[Cell(c, rid)] - guaranteed(c, rid));
      u[Cell(*it, rid)] = s;
    }
  }
  return u;
}

}  // namespace tidal::tenancy
