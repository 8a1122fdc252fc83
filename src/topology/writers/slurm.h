// Slurm topology writers. topology.conf: the tree plugin's SwitchName= lines
// (leaf switches with Nodes=, upper switches with Switches=), or, when the
// topology has block-level domains (NVL72 racks), the block plugin's
// BlockName= lines with BlockSizes=. topology.yaml: a tree topology and,
// with blocks, a block topology as well. Host lists are compressed.
#pragma once

#include <string>

#include "topology/topology.h"

namespace tidal::topo {

Result<std::string> WriteSlurmTopologyConf(const Topology& t);
Result<std::string> WriteSlurmTopologyYaml(const Topology& t);

}  // namespace tidal::topo
