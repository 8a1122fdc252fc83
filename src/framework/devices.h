// Device-level helpers shared by filters, scorers and selectors: whether a
// node's GPUs can host a request and which devices a given rule picks. These
// follow Open-GPU-Share's semantics as used by the FGD simulator.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "cluster/cluster_state.h"
#include "common/rng.h"
#include "framework/plugin.h"

namespace tidal::devices {

// The largest node of the openb cluster (128 cores, 8 GPUs). The FGD paper's
// DotProd, BestFit and GpuClustering normalise by it; kept as named constants
// so those policies agree with the published results on any cluster.
inline constexpr int64_t kRefMaxNodeCpuMilli = 128000;
inline constexpr int64_t kRefMaxNodeGpuMilli = 8000;

// Number of devices with at least `milli` free.
int CountFitting(std::span<const int32_t> free, int32_t milli);

// True if the node's model is allowed and enough devices fit the request.
bool GpuFits(const ClusterState& c, const PodRequest& pod, NodeId n);

// Whole-GPU requests take the lowest-indexed fully free devices.
std::optional<std::vector<int32_t>> FirstFreeWhole(std::span<const int32_t> free, int32_t count);
// A sharing request takes the device with the least sufficient free milli
// (lowest index on ties).
std::optional<int32_t> BestFitShare(std::span<const int32_t> free, int32_t milli);
// A sharing request takes a uniformly random sufficient device.
std::optional<int32_t> RandomShare(std::span<const int32_t> free, int32_t milli, Rng& rng);

// Builds the assignment of `pod` onto `devs` of node n (CPU and memory too).
NodeAssignment MakeAssignment(NodeId n, const PodRequest& pod, std::span<const int32_t> devs);

// Device choice shared by most policies: whole GPUs first-free, sharing best-fit.
std::optional<NodeAssignment> SelectBestFit(const ClusterState& c, const PodRequest& pod, NodeId n);

}  // namespace tidal::devices
