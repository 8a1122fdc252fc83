// Levels of the interconnect tree, innermost first. A path from a GPU to the
// root visits strictly increasing levels; a cluster need not have every level
// (mixed depths are allowed: a host may sit directly under a spine).
//
//   gpu     one device
//   nvlink  a sub-node NVLink group (a PCIe NVLink-bridge pair, an NVSwitch
//           island smaller than the host)
//   pcie    a PCIe switch or NUMA node inside a host
//   node    a host (what Slurm and Kubernetes call a node)
//   block   a group of hosts with its own fabric: a multi-node NVLink domain
//           (GB200/GB300 NVL72 rack, Slurm topology/block, topograph's
//           accelerator domain) or a generic block of hosts
//   leaf    a ToR / leaf switch, or a rail group (one leaf per rail)
//   spine   spine / aggregation switches
//   core    core / super-spine switches
//   zone    a data hall, zone or site
//
// Whether GPUs talk over NVLink is a property of a domain (Domain::nvlink),
// not a level: an 8-GPU NVSwitch host is a `node` with nvlink set, an NVL72
// rack a `block` with nvlink set.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "common/result.h"

namespace tidal::topo {

enum class Level : uint8_t { kGpu, kNvlink, kPcie, kNode, kBlock, kLeaf, kSpine, kCore, kZone };

inline constexpr int kNumLevels = 9;
inline constexpr std::array<Level, kNumLevels> kAllLevels = {Level::kGpu,  Level::kNvlink, Level::kPcie,
                                                             Level::kNode, Level::kBlock,  Level::kLeaf,
                                                             Level::kSpine, Level::kCore,  Level::kZone};

std::string_view LevelName(Level l);
// Accepts the names above and common synonyms (host, tor, rack, rail, agg,
// aggregation, superspine, datacenter, numa, switch levels "tier-1".."tier-4"
// are not accepted here: readers map tiers themselves).
Result<Level> ParseLevel(std::string_view name);
inline int LevelIndex(Level l) { return static_cast<int>(l); }

}  // namespace tidal::topo
