#include "tenancy/fair_share.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tidal::tenancy {

UsageMeter::UsageMeter(const TenantTree& tree, double half_life_s)
    : half_life_s_(half_life_s > 0 ? half_life_s : 7 * 86400.0),
      usage_(static_cast<size_t>(tree.size()), 0),
      rate_(static_cast<size_t>(tree.size()), 0),
      share_(static_cast<size_t>(tree.size()), 0) {
  SetShares(tree);
}

void UsageMeter::SetShares(const TenantTree& tree) {
  std::fill(share_.begin(), share_.end(), 0.0);
  const auto gpu = tree.resource("gpu");
  double floors = 0, weights = 0;
  for (TenantId t : tree.Leaves()) {
    floors += gpu ? static_cast<double>(tree.nominal(t, *gpu)) : 0;
    weights += tree.spec(t).weight;
  }
  for (TenantId t : tree.Leaves()) {
    const double w = tree.spec(t).weight;
    const double f = gpu && floors > 0 ? static_cast<double>(tree.nominal(t, *gpu)) / floors : w / weights;
    // A tenant with no floor still has a (small) share: it may run on idle capacity.
    share_[static_cast<size_t>(t)] = std::max(f, 1e-6) * (gpu && floors > 0 ? w : 1);
  }
}

void UsageMeter::Advance(int64_t now_s) {
  if (!started_) {
    started_ = true;
    now_s_ = now_s;
    return;
  }
  if (now_s <= now_s_) return;
  const double dt = static_cast<double>(now_s - now_s_);
  const double d = std::exp2(-dt / half_life_s_);
  const double k = half_life_s_ / std::log(2.0) * (1 - d);
  total_ = 0;
  for (size_t i = 0; i < usage_.size(); ++i) {
    usage_[i] = usage_[i] * d + rate_[i] * k;
    total_ += usage_[i];
  }
  now_s_ = now_s;
}

void UsageMeter::AddRate(TenantId t, double delta_gpus) {
  double& r = rate_[static_cast<size_t>(t)];
  r = std::max(0.0, r + delta_gpus);
}

double UsageMeter::NormalizedUsageOverShare(TenantId t) const {
  const auto i = static_cast<size_t>(t);
  if (total_ <= 0 || share_[i] <= 0) return 0;
  return usage_[i] / total_ / share_[i];
}

double UsageMeter::SlurmFactor(TenantId t) const {
  // A tenant without a floor has a tiny share: keep the factor positive (Slurm's is in (0, 1]).
  return std::max(std::exp2(-NormalizedUsageOverShare(t)), std::numeric_limits<double>::min());
}

int64_t DominantResourceShare(const TenantTree& tree, TenantId t) {
  const TenantId p = tree.parent(t);
  if (p == kNoTenant) return 0;
  double best = 0;
  for (ResourceId r = 0; r < tree.num_resources(); ++r) {
    const int64_t above = tree.usage(t, r) - tree.subtree(t, r);
    const int64_t lendable = tree.subtree(p, r);
    if (above <= 0 || lendable <= 0) continue;
    best = std::max(best, static_cast<double>(above) * 1000.0 / static_cast<double>(lendable));
  }
  return static_cast<int64_t>(best / tree.spec(t).weight);
}

}  // namespace tidal::tenancy
