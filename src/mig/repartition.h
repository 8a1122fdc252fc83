// Re-partition planning: from the MIG layout a GPU has now to the one that is
// wanted, destroying only the GPU instances that must change (docs/
// mig-repartition.md has the rules, the cost model and the sources).
//
// With MIG mode already on, GPU instances are created and destroyed one at a
// time while the others keep running ("Once the GPU is in MIG mode, instance
// management is then dynamic", MIG User Guide, Deployment Considerations;
// `nvidia-smi mig -dgi -gi <ID>`, nvmlGpuInstanceDestroy,
// nvmlDeviceCreateGpuInstanceWithPlacement). Only toggling MIG mode needs
// the GPU idle and reset. So a plan keeps every instance it can, and the
// reconfiguration time stops only the changed slices; mig-parted's apply
// instead destroys every instance of the GPU and creates the target anew
// (PlanClearAndApply models that, for comparison).
//
// Every planner here is exhaustive over the valid layouts of the GPU (2319 on
// A100/H100/H200), so "fewest disruptions" is exact, not a heuristic.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/result.h"
#include "mig/geometry.h"

namespace tidal::mig {

// One instance of the current layout and what runs in it.
struct InstanceState {
  Instance instance;
  int64_t owner = 0;           // 0 = free; else the occupant (job/replica id)
  double disruption_cost = 0;  // what moving the occupant costs: e.g. 1 for a
                               // stateless inference replica, 100 for a
                               // training job; ignored when free; >= 0
};

struct RepartitionOptions {
  DriverCaps caps;
  double reconfig_s = 30;            // per create/destroy batch on one GPU
  double free_instance_cost = 0.01;  // tie-break: keep free instances too
};

struct RepartitionPlan {
  Layout target;                   // the layout after the change (normalized)
  std::vector<Instance> keep, destroy, create;  // each in start order
  std::vector<int64_t> disrupted;  // owners of destroyed busy instances, one per
                                   // instance, in start order
  double cost = 0;                 // disrupted occupants' costs + free_instance_cost
                                   // per destroyed free instance
  double seconds_unavailable = 0;  // reconfig_s for the changed slices (0 if
                                   // nothing changes); kept instances keep serving
};

// All valid layouts of g (any number of instances, including the empty one),
// each normalized, in a fixed order; computed once per geometry and caps.
const std::vector<Layout>& EnumerateLayouts(const Geometry& g, DriverCaps caps = {});

// wanted_counts[p]: instances of profile p (what mig-parted's mig-devices
// says); shorter than g.profiles means 0 for the rest. Among all valid
// placements of exactly those counts, the one that disrupts least: lowest
// cost, then fewest destroy+create, then the lowest starts of the created
// instances (then of the whole target). Error when the counts
// fit no layout (naming the rule), a count is negative, the span is longer
// than the profile list, or `current` is not a valid layout.
Result<RepartitionPlan> PlanRepartition(const Geometry& g, std::span<const InstanceState> current,
                                        std::span<const int> wanted_counts, const RepartitionOptions& options = {});

// To an exact target layout (validated).
Result<RepartitionPlan> PlanRepartitionTo(const Geometry& g, std::span<const InstanceState> current, const Layout& target,
                                          const RepartitionOptions& options = {});

// What mig-parted's apply would do: nothing when the current profile counts
// already equal the target's (it compares counts, not placements; target is
// then the current layout), else destroy every instance and create the target.
// For comparison in reports; inputs are not validated (use PlanRepartitionTo
// for that), and out-of-range profiles are counted, never indexed.
RepartitionPlan PlanClearAndApply(const Geometry& g, std::span<const InstanceState> current, const Layout& target,
                                  const RepartitionOptions& options = {});

// The smallest change after which a free instance of `profile` exists (the
// co-location ladder's "MIG re-slice" step): nothing when one is free
// already, else destroying only free instances if that is enough, else the
// cheapest busy ones (their occupants must move off this GPU). A busy
// instance of `profile` itself may be the one vacated: it is then listed in
// both destroy and create (re-created in place, fresh for the newcomer).
// Preference: no busy instance destroyed, then as PlanRepartition.
Result<RepartitionPlan> PlanMakeRoom(const Geometry& g, std::span<const InstanceState> current, int profile,
                                     const RepartitionOptions& options = {});

// The memory slices a plan takes down for its reconfiguration time: those of
// its destroyed and created instances (bit i = memory slice i).
uint32_t ChangedMemoryMask(const Geometry& g, const RepartitionPlan& plan);

}  // namespace tidal::mig
