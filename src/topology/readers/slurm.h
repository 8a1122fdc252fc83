// Slurm topology files: topology.conf (topology/tree: SwitchName= with
// Nodes= / Switches= and LinkSpeed=; topology/block: BlockName= with Nodes=
// and BlockSizes=; topology/ring: RingName= with Nodes=) and topology.yaml (a
// list of named topologies, each tree, block, ring, flat or torus3d; the
// cluster_default one is read unless one is named).
//
// Hosts have unknown GPU counts (Materialize fills them in). Switches over
// nodes are leaves, higher tiers spine, core, zone by height; switches with
// the same children merge into one domain (Domain::switches; over hosts a
// rail group). Blocks and rings are block-level domains (nvlink off: the
// files do not say). LinkSpeed and BlockSizes, which tidal does not model,
// are kept as notes. A flat or torus3d topology cannot be read.
#pragma once

#include <string>
#include <string_view>

#include "topology/topology.h"

namespace tidal::topo {

Result<Topology> ReadSlurmTopologyConf(std::string_view text, const std::string& source);
// topology_name: which topology of the file to read ("" = the first with
// cluster_default: true, else the first). "tree+blocks" (either order) reads
// tree topology `tree` with the blocks (or rings) of topology `blocks` put
// between its leaves and their hosts: what WriteSlurmTopologyYaml writes for
// a topology with blocks reads back whole as "tree+block".
Result<Topology> ReadSlurmTopologyYaml(std::string_view text, const std::string& source,
                                       const std::string& topology_name = "");

}  // namespace tidal::topo
