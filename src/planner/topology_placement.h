// From a real placement on the interconnect model to the planner's
// Placement: which link a communication group of `span` consecutive ranks
// crosses. Ranks follow the GPUs' pre-order in the topology (a launcher's
// node_rank * nproc_per_node + local_rank over hosts sorted by their place
// in the fabric), so consecutive ranks share a host, then a leaf.
//
// For every divisor k of the GPU count, the ranks are cut into blocks of k
// consecutive ranks; a block's link is the worst neighbour-to-neighbour link
// of its ring (bandwidth after uplink oversubscription, latency, hops, from
// topo::Topology::Between); the placement's link at span k is the worst
// block's. The NVLink span is the largest k whose every block lies in one
// NVLink domain. Consecutive spans with the same link are merged.
#pragma once

#include <span>

#include "planner/cost_model.h"
#include "topology/topology.h"

namespace tidal::planner {

// gpus: the job's GPU domains; sorted here into rank order.
Placement PlacementFromTopology(const topo::Topology& t, std::span<const topo::DomainId> gpus);

}  // namespace tidal::planner
