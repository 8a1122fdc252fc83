// MIG placers: where a job asking for one MIG instance (Job::mig_profile)
// goes. Candidates are, per node whose GPU model has the profile and whose
// CPU and memory fit: every GPU in MIG mode with a free instance of the
// profile or room to create one (free instances in the way may be destroyed,
// mig/packer.h), and — only when no GPU in MIG mode can take it — an idle
// GPU put into MIG mode.
//
//  * MigPack (tidal): the fragmentation-aware choice (mig/packer.h
//    BestSlot) over all candidates: the smallest increase of expected
//    unusable free compute for the mix of MIG jobs now bound (Laplace-
//    smoothed, so an unseen profile still counts), then reuse of an existing
//    instance, then the fuller GPU (best fit), then node and device order.
//    An idle GPU is taken from the node with the fewest free whole GPUs, so
//    fully free nodes stay whole for training gangs.
//  * MigFirstFit (the reactive greedy baseline, as HAMi's and nos's MIG
//    modes place: the first GPU that fits): the first candidate in node and
//    device order, its first free instance or lowest start; the first idle
//    GPU otherwise.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "framework/plugin.h"
#include "mig/packer.h"

namespace tidal::plugins {

enum class MigPackPolicy { kFragAware, kFirstFit };

class MigPack final : public MigPlacePlugin, public ReservePlugin {
 public:
  explicit MigPack(MigPackPolicy policy = MigPackPolicy::kFragAware) : policy_(policy) {}
  std::string_view name() const override { return policy_ == MigPackPolicy::kFragAware ? "MigPack" : "MigFirstFit"; }
  std::optional<Placement> PlaceMig(const CycleContext& ctx, const PodRequest& pod) override;
  void Reserve(const ClusterState& cluster, const Job& job, const Placement& placement) override;
  void Unreserve(const ClusterState& cluster, const Job& job, const Placement& placement) override;
  // MIG jobs bound now, of this profile (the request mix).
  int64_t bound(const std::string& profile) const {
    auto it = bound_.find(profile);
    return it == bound_.end() ? 0 : it->second;
  }

 private:
  mig::AddableMemo& MemoFor(const mig::Geometry& g);
  // The nodes with a GPU in MIG mode, in node order, kept while the
  // cluster's MIG layouts hold still (a placement reads them on every call).
  const std::vector<NodeId>& MigNodes(const ClusterState& c);

  MigPackPolicy policy_;
  std::map<const mig::Geometry*, mig::AddableMemo> memos_;  // geometries are the static table's
  std::map<std::string, int64_t> bound_;  // MIG jobs bound, per profile name
  std::set<JobId> seen_;
  std::vector<NodeId> mig_nodes_;
  uint64_t mig_nodes_instance_ = 0, mig_nodes_version_ = 0;
  bool mig_nodes_known_ = false;
};

}  // namespace tidal::plugins
