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

// frag(held) from the most addable instances of each profile.
double FragFrom(const Geometry& g, const Layout& held, const RequestMix& mix, const std::vector<int8_t>& addable) {
  const int free_compute = kComputeSlices - ComputeUsed(g, held);
  double total_w = 0, frag = 0;
  for (size_t k = 0; k < g.profiles.size(); ++k) {
    const double w = mix.weight.empty() ? 1.0 : (k < mix.weight.size() ? mix.weight[k] : 0.0);
    if (w <= 0) continue;
    total_w += w;
    const int usable = g.profiles[k].compute * addable[k];
    frag += w * (free_compute - std::min(usable, free_compute));
  }
  return total_w > 0 ? frag / total_w : 0.0;
}

std::vector<int8_t> AllAddable(const Geometry& g, const Layout& held, DriverCaps caps) {
  std::vector<int8_t> out(g.profiles.size());
  for (size_t k = 0; k < g.profiles.size(); ++k) out[k] = static_cast<int8_t>(MaxAddable(g, held, static_cast<int>(k), caps));
  return out;
}

bool ReusesFree(const GpuSlots& gpu, const Instance& in) {
  if (!gpu.layout) return false;
  for (size_t i = 0; i < gpu.layout->instances.size(); ++i)
    if (!gpu.held[i] && gpu.layout->instances[i] == in) return true;
  return false;
}

}  // namespace

bool BetterSlot(const SlotChoice& a, const SlotChoice& b) {
  if (std::abs(a.delta - b.delta) > 1e-9) return a.delta < b.delta;
  if (a.reuse != b.reuse) return a.reuse;
  return a.instance.start < b.instance.start;
}

AddableMemo::AddableMemo(const Geometry& g, DriverCaps caps) : g_(&g), caps_(caps), keyed_(g.profiles.size() < 15) {
  for (const Profile& p : g.profiles)
    for (int s : p.starts) keyed_ = keyed_ && s >= 0 && s < 8;
}

uint32_t AddableMemo::Key(const Layout& held) {
  uint32_t key = 0;
  for (const Instance& in : held.instances) key |= Key(in);
  return key;
}

const std::vector<int8_t>& AddableMemo::Of(const Layout& held) {
  if (!keyed_) return scratch_ = AllAddable(*g_, held, caps_);
  const uint32_t key = Key(held);
  auto it = memo_.find(key);
  if (it == memo_.end()) it = memo_.emplace(key, AllAddable(*g_, held, caps_)).first;
  return it->second;
}

double AddableMemo::Fragmentation(const Layout& held, const RequestMix& mix) { return FragFrom(*g_, held, mix, Of(held)); }

std::vector<SlotChoice> SlotDeltas(AddableMemo& memo, const Layout& held_in, int profile, const RequestMix& mix) {
  const Geometry& g = memo.geometry();
  Layout held = held_in;
  const double before = memo.Fragmentation(held, mix);
  std::vector<SlotChoice> out;
  for (int start : g.profile(profile).starts) {
    const Instance in{profile, start};
    if (!Fits(g, held, in, memo.caps())) continue;
    held.instances.push_back(in);
    out.push_back(SlotChoice{in, false, memo.Fragmentation(held, mix) - before});
    held.instances.pop_back();
  }
  return out;
}

std::optional<SlotChoice> BestSlot(AddableMemo& memo, const GpuSlots& gpu, int profile, const RequestMix& mix) {
  std::optional<SlotChoice> best;
  for (SlotChoice c : SlotDeltas(memo, Held(gpu), profile, mix)) {
    c.reuse = ReusesFree(gpu, c.instance);
    if (!best || BetterSlot(c, *best)) best = c;
  }
  return best;
}

int MaxAddable(const Geometry& g, const Layout& held, int profile, DriverCaps caps) {
  Layout l = held;
  return MaxAddableFrom(g, l, profile, 0, caps);
}

double Fragmentation(const Geometry& g, const Layout& held, const RequestMix& mix, DriverCaps caps) {
  return FragFrom(g, held, mix, AllAddable(g, held, caps));
}

std::optional<SlotChoice> BestSlot(const Geometry& g, const GpuSlots& gpu, int profile, const RequestMix& mix, DriverCaps caps) {
  Layout held = Held(gpu);
  const double before = Fragmentation(g, held, mix, caps);
  std::optional<SlotChoice> best;
  for (int start : g.profile(profile).starts) {
    const Instance in{profile, start};
    if (!Fits(g, held, in, caps)) continue;
    held.instances.push_back(in);
    const SlotChoice c{in, ReusesFree(gpu, in), Fragmentation(g, held, mix, caps) - before};
    held.instances.pop_back();
    if (!best || BetterSlot(c, *best)) best = c;
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
