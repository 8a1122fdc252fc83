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

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
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
// MaxAddable of every profile of one geometry, remembered per held layout.
// At most one instance starts at each memory slice, so a layout is its
// start -> profile map, a 32-bit key: a fleet's thousands of GPUs share a
// few dozen held layouts, and the brute force runs once per layout. Same
// answers as MaxAddable and Fragmentation; one per scheduler (not
// thread-safe).
class AddableMemo {
 public:
  explicit AddableMemo(const Geometry& g, DriverCaps caps = {});
  const Geometry& geometry() const { return *g_; }
  DriverCaps caps() const { return caps_; }
  // Per profile index: the most instances of it that can be added to held.
  const std::vector<int8_t>& Of(const Layout& held);
  double Fragmentation(const Layout& held, const RequestMix& mix);
  // The key of a layout (profile + 1 in the 4 bits of its start slice).
  static uint32_t Key(const Layout& held);
  // One instance's bits of a key (a layout's key ORs its instances').
  static uint32_t Key(const Instance& in) { return static_cast<uint32_t>(in.profile + 1) << (4 * in.start); }
  size_t size() const { return memo_.size(); }

 private:
  const Geometry* g_;
  DriverCaps caps_;
  bool keyed_;  // every profile index and start fits the key
  std::unordered_map<uint32_t, std::vector<int8_t>> memo_;
  std::vector<int8_t> scratch_;  // the answer when !keyed_
};

// Every place for one `profile` instance on a GPU whose held instances are
// `held`, each with its frag increase (reuse left false): BestSlot's
// candidates, before the tie-break on reuse.
std::vector<SlotChoice> SlotDeltas(AddableMemo& memo, const Layout& held, int profile, const RequestMix& mix);
// BestSlot through the memo (the same choice).
std::optional<SlotChoice> BestSlot(AddableMemo& memo, const GpuSlots& gpu, int profile, const RequestMix& mix);
// BestSlot's order on one GPU: the smaller increase (equal within
// rounding), then reuse of an existing free instance, then the lower start.
bool BetterSlot(const SlotChoice& a, const SlotChoice& b);

// The first place (lowest start; existing free instance first): the
// reactive greedy baseline.
std::optional<SlotChoice> FirstSlot(const Geometry& g, const GpuSlots& gpu, int profile, DriverCaps caps = {});

}  // namespace tidal::mig
