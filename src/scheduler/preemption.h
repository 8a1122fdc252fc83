// Choosing whom to preempt: the smallest-cost set of running jobs whose
// release makes room for a preemptor inside ONE domain — the domain the
// preemptor will use. A job that fits on one host frees one host; a larger
// gang frees the smallest topology domain (leaf, spine, ...) that can hold
// it, not GPUs scattered over the cluster. Gangs are victims whole.
//
// Cost of a victim = GPU-seconds of work lost since its last checkpoint
// plus its restart penalty (the caller computes it). Per domain the plan is
// greedy by cost per GPU freed inside the domain, then pruned (victims not
// needed after all are dropped, dearest first); the cheapest domain wins,
// ties by fewer victims, then lower domain id. The plan is only a proposal:
// the queue checks it on the real placer (release, try, restore) before
// anything is evicted. A candidate with any part on a cordoned node is never
// chosen, and a cordoned host is never the domain to empty: what is released
// there stays in the cordon's hold (ClusterState::Cordon).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "cluster/cluster_state.h"
#include "framework/plugin.h"

namespace tidal {

struct VictimCandidate {
  const Job* job = nullptr;
  int64_t cost = 0;  // lost GPU-seconds + restart penalty
  int32_t group = 0; // caller's grouping key (e.g. tenant), passed back to `admissible`
  const Placement* placement = nullptr;  // its allocation (looked up when null)
};

// PreemptionPlan::domain of a plan over the whole cluster.
inline constexpr int64_t kWholeCluster = -2;
// PreemptionPlan::domain of topology domain d at level l.
inline int64_t PlanDomain(topo::Level l, topo::DomainId d) { return (int64_t{topo::LevelIndex(l) + 1} << 40) | d; }

struct PreemptionPlan {
  // The domain: a NodeId at host level, (LevelIndex + 1) << 40 | DomainId
  // for a topology domain, kWholeCluster for the whole cluster.
  int64_t domain = -1;
  std::vector<size_t> victims;  // indices into the candidates
  int64_t cost = 0;
};

// Where a preemptor would go: hosts when it fits on one, else the smallest
// topology level whose domains can hold it (the whole cluster without a
// topology). When no plan is found there, a gang tries whole hosts under
// wider domains, up to the whole cluster; when no set of whole hosts can be
// emptied (a host it needs holds a job that is no victim), GPUs anywhere
// inside one domain of the smallest level that can hold it (the whole
// cluster without a topology).
struct PreemptionScope {
  bool host_level = true;
  topo::Level level = topo::Level::kNode;
};
PreemptionScope ScopeFor(const ClusterState& c, const PodRequest& pod);

// Whether any part of `p` lies on a cordoned node. Such a job is never a
// victim: what it frees there goes into the cordon's hold, not to the
// preemptor, and restoring it after a failed plan would need a bind on the
// cordoned node, which CanBind refuses. PlanPreemption skips such
// candidates; a caller may leave them out of its candidates to begin with.
bool OnCordonedNode(const ClusterState& c, const Placement& p);

// `admissible(candidate, chosen)` says whether the candidate may be added
// to the victims already chosen (e.g. its tenant still borrows after them).
// `committed`: if set, only that domain is considered (a preemptor stays
// with the domain it chose in an earlier cycle while it still works there).
std::optional<PreemptionPlan> PlanPreemption(
    const ClusterState& c, const PodRequest& pod, std::span<const VictimCandidate> candidates,
    const std::function<bool(const VictimCandidate&, std::span<const size_t> chosen)>& admissible,
    std::optional<int64_t> committed = std::nullopt);

}  // namespace tidal
