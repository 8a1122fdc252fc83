// Slurm topology files: topology.conf (topology/tree: SwitchName= with
// Nodes= / Switches= and LinkSpeed=; topology/block: BlockName= with Nodes=
// and BlockSizes=) and topology.yaml (a list of named topologies, each tree,
// block or flat; the cluster_default one is read unless one is named).
#pragma once

#include <string>
#include <string_view>

#include "topology/topology.h"

namespace tidal::topo {

Result<Topology> ReadSlurmTopologyConf(std::string_view text, const std::string& source);
// topology_name: which topology of the file to read ("" = the cluster_default one).
Result<Topology> ReadSlurmTopologyYaml(std::string_view text, const std::string& source,
                                       const std::string& topology_name = "");

}  // namespace tidal::topo
