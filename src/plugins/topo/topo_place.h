// tidal's topology placer ("topo"): places every whole-GPU job from the
// per-domain free aggregates, without scanning all nodes.
//
//  * A job that fits on one host goes to one host: the largest hosts first
//    and, among them, the tightest (fewest free GPUs that hold it) — on a
//    homogeneous cluster plain best fit; on a mixed one small jobs fill the
//    large hosts' leftovers and the small hosts, which only small jobs can
//    use, stay free for the small jobs that arrive while multi-GPU jobs wait
//    (measured on Philly's 2- and 8-GPU machines: 4% less mean queueing at
//    0.75 load and 45% less at 0.9 than tightest-of-any-size, 3% more at 0.6;
//    docs/topology.md). Per-size free-host histograms per domain say which
//    free counts exist and where, so there is no scan. Among equally tight
//    hosts, the one under the most-allocated domains (small jobs fill
//    domains that are already broken, and whole leaves, NVL72 racks and
//    spine groups stay whole for the gangs that need them); on the host, the
//    tightest NVLink group / PCIe switch (framework/gang.h). While the queue
//    backfills, hosts its head's reservation counts on
//    (CycleContext::reserved_nodes) are taken only when no other host fits.
//  * A gang that spans hosts: at each level above the host, the best-fit
//    domain (fewest free GPUs that still hold it), the domain with the most
//    whole free hosts and the one needing the fewest hosts are candidates (a
//    handful per level, not all subsets); inside a candidate, a child that
//    holds it all (fewest hosts, then tightest) is used, else children are
//    taken largest first with a best-fit last child; hosts give whole
//    tensor-parallel groups
//    (Job::tp_group) inside NVLink domains, and a gang's GPUs on different
//    hosts use the same local indices (so DP peers share rails).
//  * With a PlacementCost (the planner's predicted step time), candidates
//    are scored by the job's slowdown; ties go to the lower level, then the
//    tighter domain, then the lower domain id. Without one, the lowest level
//    wins, then the fewest hosts. While its best slowdown exceeds
//    Job::topo_slowdown_ok a job is deferred (ErrorCode::kDeferred) for up to
//    Job::topo_max_wait_s since submission (negative: as long as it takes),
//    like Slurm's --switches=N@time.
//  * Job::topo_required limits candidates to domains at or below that level;
//    Job::topo_preferred prefers them and falls back upwards.
#pragma once

#include <vector>

#include "framework/gang.h"
#include "framework/plugin.h"

namespace tidal::plugins {

class TopoPlace final : public GangPlacePlugin {
 public:
  std::string_view name() const override { return "TopoPlace"; }
  bool PlacesWholeGpuJobs() const override { return true; }
  std::optional<Placement> PlaceGang(const CycleContext& ctx, const PodRequest& pod) override;

 private:
  struct Candidate {
    std::vector<gang::Piece> pieces;
    topo::DomainId domain = topo::kNoDomain;
    int level = 0;
    int32_t free = 0;
    int32_t hosts = 0;
    double slowdown = 1;
  };
  NodeId OneHost(const CycleContext& ctx, const PodRequest& pod, topo::DomainId d, int32_t tp) const;
  NodeId Descend(const CycleContext& ctx, const PodRequest& pod, topo::DomainId d, int32_t tp, int32_t size_class, int32_t free,
                 bool avoid) const;
  NodeId Descend(const CycleContext& ctx, const PodRequest& pod, topo::DomainId d, int32_t tp, int32_t free) const;
  int32_t Fill(const CycleContext& ctx, const PodRequest& pod, topo::DomainId d, int32_t want, int32_t tp,
               std::vector<gang::Piece>& pieces) const;
  std::optional<Placement> Flat(const CycleContext& ctx, const PodRequest& pod) const;
  bool ModelOk(const ClusterState& c, const PodRequest& pod, topo::DomainId d) const;
};

}  // namespace tidal::plugins
