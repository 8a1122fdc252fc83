// An EASY-backfill reservation (Lifka '95; Mu'alem & Feitelson '01): the
// earliest time the running jobs' known end times free enough capacity for
// a blocked job (the head), and the free capacity at that time minus the
// backfilled jobs that run past it. Shared by the FIFO queue (queue.h) and
// the tenant queue (tenant_queue.h).
//
// "Capacity for the head" is judged on a detached copy of the free state with
// the node filters' rules (CPU, memory, GPU model, devices with enough free
// milli-GPU); a gang may also gather whole free GPUs across nodes of allowed
// models, as GangPack does. A deferred head (its placer waits for a compact
// placement) is reserved a compact placement: on one node when it fits on
// one. (A gang's compactness is the placer's to judge: its capacity is held
// as for any head; reserving only fully free hosts under one switch measured
// worse on Philly, docs/topology.md.)
#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "cluster/cluster_state.h"
#include "framework/plugin.h"

namespace tidal {

inline constexpr int64_t kNoReservation = std::numeric_limits<int64_t>::max();

// Free capacity of every node, detached from ClusterState, so a queue can
// ask "what if these jobs had ended / this job were running?" without
// touching the real state.
class FreeCapacity {
 public:
  void CopyFrom(const ClusterState& c);
  int32_t num_nodes() const { return static_cast<int32_t>(cpu_.size()); }
  // sign +1 returns an assignment's capacity, -1 takes it. On a cordoned
  // node neither changes anything: what its jobs release stays in the
  // cordon's hold (ClusterState::Unbind), so it is never free here.
  void Apply(const NodeAssignment& a, int sign);
  // Would a single-node request fit on node n (the ResourceFit and GpuFit
  // filters' rules)? Never on a cordoned node.
  bool Fits(const PodRequest& pod, NodeId n) const;
  // Whole free GPUs on node n.
  int32_t whole_free(NodeId n) const { return whole_[n]; }
  int32_t gpu_count(NodeId n) const { return count_[n]; }
  GpuModelId model(NodeId n) const { return model_[n]; }

 private:
  std::vector<int64_t> cpu_, mem_;
  std::vector<GpuModelId> model_;
  std::vector<int32_t> count_, offset_, whole_;
  std::vector<int32_t> gpu_;
  std::vector<uint8_t> cordoned_;
};

struct ReservationRules {
  bool compact = false;       // the head was deferred: reserve a compact placement
  bool gangs_gather = false;  // the profile has a gang placer
  int32_t largest_node_gpus = 0;
};

class BackfillReservation {
 public:
  // Computes the head's reservation at `now` from the running jobs, given
  // as (end time, job id) in end order; all jobs ending at the same second
  // are released before the head is tested (finishes precede starts).
  void Compute(const ClusterState& c, const std::set<std::pair<int64_t, JobId>>& running, const PodRequest& head,
               int64_t now, ReservationRules rules);
  // Takes `placement` out of the reserved capacity if the head still fits
  // afterwards; otherwise leaves it unchanged and returns false.
  bool Take(const PodRequest& head, const Placement& placement);

  int64_t time_s() const { return time_s_; }
  bool compact() const { return rules_.compact; }
  // Per node: the head fits there on its own at the reservation.
  const std::vector<uint8_t>& fits() const { return fits_; }
  int32_t fitting_nodes() const { return fitting_nodes_; }

 private:
  bool HeadFits(const PodRequest& head) const;
  void RecountNode(const PodRequest& head, NodeId n, int sign);

  ReservationRules rules_;
  int64_t time_s_ = kNoReservation;
  FreeCapacity free_;
  std::vector<uint8_t> fits_;
  int32_t fitting_nodes_ = 0;
  int64_t whole_allowed_ = 0;  // whole free GPUs on nodes of allowed models
};

}  // namespace tidal
