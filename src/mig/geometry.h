// MIG geometry: the GPU instance profiles of each MIG-capable GPU and the
// rules a layout of instances on one GPU must follow, as the NVIDIA MIG User
// Guide states them (tables "GPU Instance Profiles on A100/H100/H200" and
// `nvidia-smi mig -lgipp` placements; fixtures in
// shared/fixtures/nvidia-smi-mig/).
//
// A GPU has 7 compute slices and 8 memory slices. A profile "Ng.Mgb" takes N
// compute slices and a fixed number of memory slices, and may start only at
// certain memory slices ("Placements: {0,2,4}:2" = starts 0, 2, 4, size 2).
// A layout is valid when
//  * every instance starts at one of its profile's placements,
//  * no two instances share a memory slice,
//  * the compute slices sum to at most 7,
//  * no profile has more instances than the guide allows (one +me, at most
//    one 4g or 7g — the placements already imply the latter),
//  * a 4g instance shares the GPU with a 3g only where the driver allows it
//    (R510+: "prior to NVIDIA driver release R510" the guide calls
//    4g+3g unsupported).
// Seven 1g instances leave memory slice 7 unused: no profile starts there.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tidal::mig {

inline constexpr int kComputeSlices = 7;
inline constexpr int kMemorySlices = 8;

struct Profile {
  std::string name;           // "1g.10gb", "1g.10gb+me", "7g.80gb"
  int gi_profile_id = 0;      // `nvidia-smi mig -lgip` ID (19, 20, 15, 14, 9, 5, 0)
  int compute = 0;            // compute slices (the "Ng" part), of 7
  int memory_slices = 0;      // memory slices (placement size), of 8
  int memory_gb = 0;          // the "Mgb" part of the name
  bool media = false;         // +me: the GPU's single media-extension instance
  std::vector<int> starts;    // valid start memory slices
  int max_instances = 0;      // "Number of Instances Available"
};

struct Geometry {
  std::string model;                  // canonical: "A100-SXM4-40GB"
  std::vector<std::string> aliases;   // names a cluster spec may use for it
  std::vector<Profile> profiles;      // as the guide lists them, smallest first

  // Index into profiles, or -1. Accepts "1g.10gb" and "MIG 1g.10gb".
  int FindProfile(std::string_view name) const;
  int FindProfileById(int gi_profile_id) const;
  const Profile& profile(int index) const { return profiles[static_cast<size_t>(index)]; }
};

// The geometry of a MIG-capable GPU model, or nullptr (not MIG-capable or
// unknown). Matches the canonical name and aliases case-insensitively,
// ignoring an "NVIDIA " prefix, spaces and dashes ("H100 80GB HBM3" → H100).
const Geometry* FindGeometry(std::string_view gpu_model);
const std::vector<Geometry>& AllGeometries();

// One GPU instance: a profile (index into the geometry) at a start slice.
struct Instance {
  int profile = 0;
  int start = 0;
  friend bool operator==(const Instance&, const Instance&) = default;
};

// The instances of one GPU, kept sorted by start slice.
struct Layout {
  std::vector<Instance> instances;
  friend bool operator==(const Layout&, const Layout&) = default;
};

struct DriverCaps {
  bool allow_4g_with_3g = true;  // R510 and newer
};

// Bit i set = memory slice i is taken by one of the layout's instances.
uint32_t MemoryMask(const Geometry& g, const Layout& layout);
uint32_t InstanceMask(const Geometry& g, const Instance& instance);
int ComputeUsed(const Geometry& g, const Layout& layout);

// OK, or an error naming the offending instance(s) and the rule broken.
Status ValidateLayout(const Geometry& g, const Layout& layout, DriverCaps caps = {});
// Whether `instance` can be added to a valid layout (same rules).
Status CanAdd(const Geometry& g, const Layout& layout, const Instance& instance, DriverCaps caps = {});
// CanAdd's answer without the message (search loops).
bool Fits(const Geometry& g, const Layout& layout, const Instance& instance, DriverCaps caps = {});
// Sorts by start slice (then profile), so equal layouts compare equal.
void Normalize(Layout& layout);

// "3g.40gb@0,2g.20gb@4,1g.10gb@6"; "" for an empty layout.
std::string FormatLayout(const Geometry& g, const Layout& layout);
// The inverse of FormatLayout; validates. "name" without "@k" takes the
// lowest start slice still free (in the order given).
Result<Layout> ParseLayout(const Geometry& g, std::string_view text, DriverCaps caps = {});

}  // namespace tidal::mig
