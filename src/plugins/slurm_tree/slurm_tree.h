// Slurm's topology/tree node selection ("slurm-tree"), after
// SchedMD/slurm src/plugins/topology/tree/eval_nodes_tree.c (_eval_nodes_topo,
// _topo_choose_best_switch, _topo_compare_switches; the best-fit leaf logic
// of commit ceaeeda68e, Slurm >= 21.08), for whole-GPU requests:
//  1. Candidate nodes: nodes that can give the job GPUs (for a job that must
//     stay on one node, nodes with all its GPUs free). Per switch: candidate
//     node count and free GPUs under it.
//  2. The top switch is the highest-level switch with enough GPUs (the root
//     of a single-rooted tree), as the code does (the guide's "lowest level
//     switch" is not what it implements).
//  3. Leaf loop: among unused leaf switches (those with nodes), the first
//     with nodes is the initial best; leaf i replaces it if it is closer to
//     the leaves already chosen (summed hop distance) and fits alone, or is
//     as close and compares better: both fit -> fewer candidate nodes;
//     one fits -> that one; neither, different parents -> compare the
//     parents; else more nodes, then lower level; full tie keeps the earlier.
//  4. Nodes of the chosen leaf are taken in node-list (bitmap) order, each
//     giving its free GPUs up to what remains.
// Slurm has no NVLink notion here: GPUs on a node come first-free.
#pragma once

#include <vector>

#include "framework/plugin.h"

namespace tidal::plugins {

class SlurmTreePlace final : public GangPlacePlugin {
 public:
  std::string_view name() const override { return "SlurmTreePlace"; }
  bool PlacesWholeGpuJobs() const override { return true; }
  std::optional<Placement> PlaceGang(const CycleContext& ctx, const PodRequest& pod) override;

 private:
  std::vector<int32_t> nodes_, gpus_;  // per domain: candidate nodes and their free GPUs
  std::vector<topo::DomainId> leaves_;
  std::vector<int64_t> dist_;
  std::vector<uint8_t> used_;
};

}  // namespace tidal::plugins
