// Fragmentation-aware MIG packing, in the spirit of FGD (Weng et al., ATC
// '23) for MIG slices: a GPU's free space is worth what the expected request
// can still use of it.
//
// The free space of a GPU in MIG mode is everything no job holds: free
// instances can be destroyed and re-created (one at a time, the others keep
// running), so the packer judges a layout by its held instances only.
// For a request mix w (weight per profile, summing to 1):
//   usable_k(L) = compute_k x (most instances of k that can be added to L)
//   frag(L)     = sum_k w_k x (free compute(L) - usable_k(L))
// i.e. the expected free compute slices a request drawn from the mix could
// not use. Placing one instance picks the candidate with the smallest
// increase of frag; ties go to a free instance that already exists (no
// reconfiguration), then to the fuller GPU (best fit), then to the lower
// start slice.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "mig/geometry.h"

namespace tidal::mig {

// Weight per profile index of g; normalised by the functions that use it.
// Empty: every profile equally likely.
struct RequestMix {
  std::vector<double> weight;
};

// The most instances of `profile` that can be added to `held` (brute force
// over placements; at most 7).
int MaxAddable(const Geometry& g, const Layout& held, int profile, DriverCaps caps = {});
double Fragmentation(const Geometry& g, const Layout& held, const RequestMix& mix, DriverCaps caps = {});

// One GPU as the packer sees it: all its instances and which are held.
struct GpuSlots {
  const Layout* layout = nullptr;   // all instances (nullptr: not in MIG mode, idle)
  std::vector<bool> held;           // per instance of *layout
};

struct SlotChoice {
  Instance instance;
  bool reuse = false;   // an existing free instance
  double delta = 0;     // frag(after) - frag(before)
};

// The best place for one `profile` instance on this GPU (nullopt if none).
std::optional<SlotChoice> BestSlot(const Geometry& g, const GpuSlots& gpu, int profile, const RequestMix& mix, DriverCaps caps = {});
// The first place (lowest start; existing free instance first): the
// reactive greedy baseline.
std::optional<SlotChoice> FirstSlot(const Geometry& g, const GpuSlots& gpu, int profile, DriverCaps caps = {});

}  // namespace tidal::mig
