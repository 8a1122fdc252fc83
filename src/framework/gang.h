// Building blocks shared by the topology placers (plugins/topo, first_fit,
// slurm_tree, kueue_tas, hived, random_gang): choosing devices on a host and
// assembling a whole-GPU gang's placement with its CPU and memory. Placers
// never use each other, so what they share lives here.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "cluster/cluster_state.h"
#include "framework/plugin.h"

namespace tidal::gang {

// GPUs of a gang on one node.
struct Piece {
  NodeId node = -1;
  std::vector<int32_t> devices;
};

// CPU and memory are shared out in proportion to the GPUs on each node, the
// rounding remainder one unit each to the nodes whose share is fractional
// (see Assemble); does `gpus` GPUs' share, with that unit, fit on node n?
bool ShareFits(const ClusterState& c, const PodRequest& pod, NodeId n, int32_t gpus);

// Can node n host `gpus` whole GPUs of this request now (model, free whole
// GPUs, CPU/memory share)?
bool NodeCanTake(const ClusterState& c, const PodRequest& pod, NodeId n, int32_t gpus);

// How many of node n's free whole GPUs a gang with tensor-parallel groups of
// `tp` GPUs can use: whole groups inside NVLink domains no larger than the
// host (a host-wide or larger NVLink domain counts as one). tp <= 1: all.
int32_t UsableGpus(const ClusterState& c, NodeId n, int32_t tp);

// Picks k free whole GPUs on node n: the tightest sub-node domain (NVLink
// group, PCIe switch / NUMA) that holds them, else the largest sub-domains
// first; whole TP groups inside NVLink domains; among equals, local indices
// in `prefer` first (so a gang's GPUs on different hosts share rails), then
// the lowest index. Without a topology: the lowest free indices. Empty if
// the node cannot give k.
std::vector<int32_t> PickDevices(const ClusterState& c, NodeId n, int32_t k, int32_t tp = 0,
                                 std::span<const int32_t> prefer = {});

// Gathers the job's GPUs from nodes in the given order, each node giving its
// free whole GPUs (as many as its CPU/memory share allows) until the job has
// them all; nullopt if the nodes do not add up. The topology-oblivious gang
// step of first-fit, random and topo without a topology.
std::optional<Placement> GatherInOrder(const ClusterState& c, const PodRequest& pod, std::span<const NodeId> order);

// The largest GPU count of any node (0 without GPUs).
int32_t LargestNodeGpus(const ClusterState& c);

// The placement of `pieces` with CPU and memory shared in proportion, the
// remainder one unit each to the first nodes whose share is fractional;
// nullopt if some node lacks the CPU or memory for its share.
std::optional<Placement> Assemble(const ClusterState& c, const PodRequest& pod, std::span<const Piece> pieces);

}  // namespace tidal::gang
