// Fair-share accounting: each tenant's GPU usage, decayed with a half-life
// (Slurm's PriorityDecayHalfLife, default 7 days), and the orderings built on
// it (docs/tenancy.md):
//
//  * share(t)    = the tenant's floor over the sum of floors (its nominal
//                  GPU quota), times its weight; tenants without a GPU floor
//                  share by weight alone.
//  * usage(t)    = decayed GPU-seconds of t / decayed GPU-seconds of all.
//  * Slurm's fair-share factor F = 2^(-usage/share) (classic algorithm,
//    higher runs first); tidal orders by usage/share (lower first) — the
//    same order, with ties broken by arrival.
//  * Kueue's dominant resource share (fair sharing): max over resources of
//    the usage above the tenant's quota over its parent's quota, x 1000 /
//    weight; 0 for a tenant within its quota.
//
// Usage is integrated exactly between events: with a constant rate r over
// [t0, t], U(t) = U(t0) d + r H / ln 2 (1 - d), d = 2^(-(t - t0) / H).
#pragma once

#include <cstdint>
#include <vector>

#include "tenancy/tenant_tree.h"

namespace tidal::tenancy {

class UsageMeter {
 public:
  UsageMeter(const TenantTree& tree, double half_life_s);

  // Shares from the tree's floors and weights (the constructor's); a quota
  // change keeps the decayed usage and changes only the shares. The tree has
  // the same tenants as the one the meter was made with.
  void SetShares(const TenantTree& tree);

  // Moves the clock to `now` (non-decreasing), integrating current rates.
  void Advance(int64_t now_s);
  // The tenant's GPUs in use changed by `delta_gpus` at the current time.
  void AddRate(TenantId t, double delta_gpus);

  double decayed(TenantId t) const { return usage_[static_cast<size_t>(t)]; }
  double total() const { return total_; }
  double share(TenantId t) const { return share_[static_cast<size_t>(t)]; }
  // usage / share; 0 before anything ran.
  double NormalizedUsageOverShare(TenantId t) const;
  // Slurm's classic fair-share factor 2^(-U/S), in (0, 1].
  double SlurmFactor(TenantId t) const;

 private:
  double half_life_s_;
  int64_t now_s_ = 0;
  bool started_ = false;
  std::vector<double> usage_, rate_, share_;
  double total_ = 0;
};

// Kueue's dominant resource share of tenant t (fair sharing), 0 when within quota.
int64_t DominantResourceShare(const TenantTree& tree, TenantId t);

}  // namespace tidal::tenancy
