#include "mig/packer.h"

#include <algorithm>
#include <cmath>

namespace tidal::mig {
namespace {

int MaxAddableFrom(const Geometry& g, Layout& l, int profile, size_t from, DriverCaps caps) {
  const Profile& p = g.profile(profile);
  int best = 0;
  for (size_t i = from; i < p.starts.size(); ++i) {
    const Instance in{profile, p.starts[i]};
    if (!Fits(g, l, in, caps)) continue;
    l.instances.push_back(in);
    best = std::max(best, 1 + MaxAddableFrom(g, l, profile, i + 1, caps));
    l.instances.pop_back();
  }
  return best;
}

Layout Held(const GpuSlots& gpu) {
  Layout held;
  if (!gpu.layout) return held;
  for (size_t i = 0; i < gpu.layout->instances.size(); ++i)
    if (gpu.held[i]) held.instances.push_back(gpu.layout->instances[i]);
  return held;
}

// Smaller frag increase first (equal within rounding), then reuse of an
// existing free instance, then the lower start slice.
bool Better(const SlotChoice& a, const SlotChoice& b) {
  if (std::abs(a.delta - b.delta) > 1e-9) return a.delta < b.delta;
  if (a.reuse != b.reuse) return a.reuse;
  return a.instance.start < b.instance.start;
}

}  // namespace

int MaxAddable(const Geometry& g, const Layout& held, int profile, DriverCaps caps) {
  Layout l = held;
  return MaxAddableFrom(g, l, profile, 0, caps);
}

double Fragmentation(const Geometry& g, const Layout& held, const RequestMix& mix, DriverCaps caps) {
  const int free_compute = kComputeSlices - ComputeUsed(g, held);
  double total_w = 0, frag = 0;
  for (size_t k = 0; k < g.profiles.size(); ++k) {
    const double w = mix.weight.empty() ? 1.0 : (k < mix.weight.size() ? mix.weight[k] : 0.0);
    if (w <= 0) continue;
    total_w += w;
    const int usable = g.profiles[k].compute * MaxAddable(g, held, static_cast<int>(k), caps);
    frag += w * (free_compute - std::min(usable, free_compute));
  }
  return total_w > 0 ? frag / total_w : 0.0;
}

std::optional<SlotChoice> BestSlot(const Geometry& g, const GpuSlots& gpu, int profile, const RequestMix& mix, DriverCaps caps) {
  Layout held = Held(gpu);
  const double before = Fragmentation(g, held, mix, caps);
  std::optional<SlotChoice> best;
  for (int start : g.profile(profile).starts) {
    const Instance in{profile, start};
    if (!Fits(g, held, in, caps)) continue;
    bool reuse = false;
    if (gpu.layout) {
      for (size_t i = 0; i < gpu.layout->instances.size(); ++i)
        if (!gpu.held[i] && gpu.layout->instances[i] == in) reuse = true;
    }
    held.instances.push_back(in);
    const SlotChoice c{in, reuse, Fragmentation(g, held, mix, caps) - before};
    held.instances.pop_back();
    if (!best || Better(c, *best)) best = c;
  }
  return best;
}

std::optional<SlotChoice> FirstSlot(const Geometry& g, const GpuSlots& gpu, int profile, DriverCaps caps) {
  const Layout held = Held(gpu);
  if (gpu.layout) {
    for (size_t i = 0; i < gpu.layout->instances.size(); ++i)
      if (!gpu.held[i] && gpu.layout->instances[i].profile == profile) return SlotChoice{gpu.layout->instances[i], true, 0};
  }
  for (int start : g.profile(profile).starts) {
    const Instance in{profile, start};
    if (Fits(g, held, in, caps)) return SlotChoice{in, false, 0};
  }
  return std::nullopt;
}

}  // namespace tidal::mig
