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
// block's. The NVLink span (Placement::gpus_per_domain, "every group up to
// this span talks over NVLink") is the largest divisor k such that the blocks
// of k and of every smaller divisor each lie in one NVLink domain: 24 GPUs
// on three 8-GPU hosts give 2, since blocks of 3 already straddle hosts. The
// divisors above it become network levels (not necessarily monotonic:
// blocks of 4 may share a host where blocks of 3 did not), consecutive
// equal ones merged; LinkFor then gives each divisor's own link.
#pragma once

#include <span>

#include "planner/cost_model.h"
#include "topology/topology.h"

namespace tidal::planner {

// gpus: the job's GPU domains; sorted here into rank order.
Placement PlacementFromTopology(const topo::Topology& t, std::span<const topo::DomainId> gpus);

}  // namespace tidal::planner
