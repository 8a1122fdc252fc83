#include "mig/geometry.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tidal::mig {
namespace {

// The seven profiles every A100/H100/H200 has, in the guide's order; only the
// memory in the names differs. Placements from `nvidia-smi mig -lgipp`
// (shared/fixtures/nvidia-smi-mig/a100-sxm4-40gb-mig-lgipp.txt); the guide
// gives the same placements for H100 and H200.
Geometry Make(std::string model, std::vector<std::string> aliases, int gb1, int gb1x2, int gb2, int gb3, int gb4, int gb7) {
  auto p = [](int g, int gb, bool me, int id, int mem, std::vector<int> starts, int max) {
    Profile pr;
    pr.name = fmt::format("{}g.{}gb{}", g, gb, me ? "+me" : "");
    pr.gi_profile_id = id;
    pr.compute = g;
    pr.memory_slices = mem;
    pr.memory_gb = gb;
    pr.media = me;
    pr.starts = std::move(starts);
    pr.max_instances = max;
    return pr;
  };
  Geometry g;
  g.model = std::move(model);
  g.aliases = std::move(aliases);
  g.profiles = {
      p(1, gb1, false, 19, 1, {0, 1, 2, 3, 4, 5, 6}, 7),
      p(1, gb1, true, 20, 1, {0, 1, 2, 3, 4, 5, 6}, 1),
      p(1, gb1x2, false, 15, 2, {0, 2, 4, 6}, 4),
      p(2, gb2, false, 14, 2, {0, 2, 4}, 3),
      p(3, gb3, false, 9, 4, {0, 4}, 2),
      p(4, gb4, false, 5, 4, {0}, 1),
      p(7, gb7, false, 0, 8, {0}, 1),
  };
  return g;
}

std::string Canon(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' || c == '-' || c == '_') continue;
    out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  if (out.starts_with("NVIDIA")) out.erase(0, 6);
  return out;
}

std::string_view StripMigPrefix(std::string_view name) {
  if (name.starts_with("MIG ")) name.remove_prefix(4);
  return name;
}

std::unexpected<Error> Bad(std::string message) { return std::unexpected(Error{ErrorCode::kInvalidArgument, std::move(message)}); }

std::string Describe(const Geometry& g, const Instance& in) {
  if (in.profile < 0 || in.profile >= static_cast<int>(g.profiles.size())) return fmt::format("profile #{}@{}", in.profile, in.start);
  return fmt::format("{}@{}", g.profile(in.profile).name, in.start);
}

}  // namespace

const std::vector<Geometry>& AllGeometries() {
  // "A100" alone means the 40 GB part, the first A100 and the one the
  // guide's examples use.
  static const std::vector<Geometry> all = {
      Make("A100-SXM4-40GB", {"A100", "A100-40GB", "A100-SXM4-40GB", "A100-PCIE-40GB"}, 5, 10, 10, 20, 20, 40),
      Make("A100-SXM4-80GB", {"A100-80GB", "A100-SXM-80GB", "A100-SXM4-80GB", "A100-PCIE-80GB", "A100 80GB PCIe"}, 10, 20, 20, 40, 40,
           80),
      // H800: the export H100 (the same die and 80 GB; NVLink cut to 400 GB/s).
      // Its datasheet gives the same MIG: up to 7 MIGs @ 10 GB each.
      Make("H100-80GB", {"H100", "H100-80GB", "H100-SXM-80GB", "H100-SXM5-80GB", "H100 80GB HBM3", "H100-PCIE-80GB", "H100 PCIe",
                         "H800", "H800-80GB", "H800-SXM5-80GB", "H800 PCIe"},
           10, 20, 20, 40, 40, 80),
      Make("H200-141GB", {"H200", "H200-141GB", "H200-SXM-141GB", "H200 NVL"}, 18, 35, 35, 71, 71, 141),
  };
  return all;
}

const Geometry* FindGeometry(std::string_view gpu_model) {
  // Every geometry's model and aliases, made canonical once, in the order
  // they are tried (a placer asks per request).
  static const std::vector<std::pair<std::string, const Geometry*>> names = [] {
    std::vector<std::pair<std::string, const Geometry*>> out;
    for (const Geometry& g : AllGeometries()) {
      out.emplace_back(Canon(g.model), &g);
      for (const std::string& a : g.aliases) out.emplace_back(Canon(a), &g);
    }
    return out;
  }();
  const std::string want = Canon(gpu_model);
  if (want.empty()) return nullptr;
  for (const auto& [name, g] : names)
    if (name == want) return g;
  return nullptr;
}

int Geometry::FindProfile(std::string_view name) const {
  name = StripMigPrefix(name);
  for (size_t i = 0; i < profiles.size(); ++i)
    if (profiles[i].name == name) return static_cast<int>(i);
  return -1;
}

int Geometry::FindProfileById(int id) const {
  for (size_t i = 0; i < profiles.size(); ++i)
    if (profiles[i].gi_profile_id == id) return static_cast<int>(i);
  return -1;
}

uint32_t InstanceMask(const Geometry& g, const Instance& in) {
  const int size = g.profile(in.profile).memory_slices;
  return ((1u << size) - 1u) << in.start;
}

uint32_t MemoryMask(const Geometry& g, const Layout& layout) {
  uint32_t mask = 0;
  for (const Instance& in : layout.instances) mask |= InstanceMask(g, in);
  return mask;
}

int ComputeUsed(const Geometry& g, const Layout& layout) {
  int sum = 0;
  for (const Instance& in : layout.instances) sum += g.profile(in.profile).compute;
  return sum;
}

namespace {

// Why an instance cannot join a layout (kFits: it can), and the instance it
// overlaps; CanAdd words it, Fits only asks (the packers' inner loops).
enum class Fault { kFits, kNoProfile, kStart, kOverlap, kCompute, kMaxInstances, kMedia, k4gWith3g };

Fault Check(const Geometry& g, const Layout& layout, const Instance& in, DriverCaps caps, const Instance** overlapped = nullptr) {
  if (in.profile < 0 || in.profile >= static_cast<int>(g.profiles.size())) return Fault::kNoProfile;
  const Profile& p = g.profile(in.profile);
  if (std::find(p.starts.begin(), p.starts.end(), in.start) == p.starts.end()) return Fault::kStart;
  const uint32_t mine = InstanceMask(g, in);
  for (const Instance& other : layout.instances) {
    if ((InstanceMask(g, other) & mine) != 0) {
      if (overlapped) *overlapped = &other;
      return Fault::kOverlap;
    }
  }
  if (ComputeUsed(g, layout) + p.compute > kComputeSlices) return Fault::kCompute;
  int same = 0;
  int media = 0;
  for (const Instance& other : layout.instances) {
    same += other.profile == in.profile;
    media += g.profile(other.profile).media;
  }
  if (same + 1 > p.max_instances) return Fault::kMaxInstances;
  if (p.media && media > 0) return Fault::kMedia;
  if (!caps.allow_4g_with_3g) {
    bool has4 = p.compute == 4, has3 = p.compute == 3;
    for (const Instance& other : layout.instances) {
      has4 = has4 || g.profile(other.profile).compute == 4;
      has3 = has3 || g.profile(other.profile).compute == 3;
    }
    if (has4 && has3) return Fault::k4gWith3g;
  }
  return Fault::kFits;
}

}  // namespace

bool Fits(const Geometry& g, const Layout& layout, const Instance& in, DriverCaps caps) {
  return Check(g, layout, in, caps) == Fault::kFits;
}

Status CanAdd(const Geometry& g, const Layout& layout, const Instance& in, DriverCaps caps) {
  const Instance* other = nullptr;
  switch (Check(g, layout, in, caps, &other)) {
    case Fault::kFits:
      return {};
    case Fault::kNoProfile:
      return Bad(fmt::format("{}: no such MIG profile on {}", Describe(g, in), g.model));
    case Fault::kStart: {
      const Profile& p = g.profile(in.profile);
      return Bad(fmt::format("{}: {} may start only at memory slice {} on {} (nvidia-smi mig -lgipp)", Describe(g, in), p.name,
                             fmt::join(p.starts, ", "), g.model));
    }
    case Fault::kOverlap:
      return Bad(fmt::format("{} overlaps {}: instances may not share a memory slice", Describe(g, in), Describe(g, *other)));
    case Fault::kCompute:
      return Bad(fmt::format("{}: the GPU has {} compute slices and the layout would use {}", Describe(g, in), kComputeSlices,
                             ComputeUsed(g, layout) + g.profile(in.profile).compute));
    case Fault::kMaxInstances: {
      const Profile& p = g.profile(in.profile);
      return Bad(fmt::format("{}: at most {} {} instance{} per GPU", Describe(g, in), p.max_instances, p.name,
                             p.max_instances == 1 ? "" : "s"));
    }
    case Fault::kMedia:
      return Bad(fmt::format("{}: a GPU has a single media-extension (+me) instance", Describe(g, in)));
    case Fault::k4gWith3g:
      return Bad(fmt::format("{}: 4g and 3g instances together need driver R510 or newer (the MIG User Guide, Concepts)", Describe(g, in)));
  }
  return {};
}

Status ValidateLayout(const Geometry& g, const Layout& layout, DriverCaps caps) {
  Layout so_far;
  for (const Instance& in : layout.instances) {
    if (Status st = CanAdd(g, so_far, in, caps); !st) return st;
    so_far.instances.push_back(in);
  }
  return {};
}

void Normalize(Layout& layout) {
  std::sort(layout.instances.begin(), layout.instances.end(),
            [](const Instance& a, const Instance& b) { return a.start != b.start ? a.start < b.start : a.profile < b.profile; });
}

std::string FormatLayout(const Geometry& g, const Layout& layout) {
  std::string out;
  for (const Instance& in : layout.instances) {
    if (!out.empty()) out += ',';
    out += Describe(g, in);
  }
  return out;
}

Result<Layout> ParseLayout(const Geometry& g, std::string_view text, DriverCaps caps) {
  Layout layout;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(pos, end - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    pos = end + 1;
    if (item.empty()) return Bad(fmt::format("MIG layout '{}': empty item; write e.g. 3g.40gb@0,2g.20gb@4", text));
    const size_t at = item.find('@');
    const std::string_view name = item.substr(0, at);
    const int profile = g.FindProfile(name);
    if (profile < 0) {
      std::vector<std::string> names;
      for (const Profile& p : g.profiles) names.push_back(p.name);
      return Bad(fmt::format("MIG layout '{}': {} has no profile '{}' (it has {})", text, g.model, name, fmt::join(names, ", ")));
    }
    Instance in{profile, -1};
    if (at != std::string_view::npos) {
      const std::string_view s = item.substr(at + 1);
      if (s.size() != 1 || s[0] < '0' || s[0] > '7')
        return Bad(fmt::format("MIG layout '{}': start slice '{}' must be one digit 0-7", text, s));
      in.start = s[0] - '0';
    } else {
      for (int start : g.profile(profile).starts) {
        if (Fits(g, layout, Instance{profile, start}, caps)) {
          in.start = start;
          break;
        }
      }
      if (in.start < 0) return Bad(fmt::format("MIG layout '{}': no free placement is left for {}", text, name));
    }
    if (Status st = CanAdd(g, layout, in, caps); !st) return Bad(fmt::format("MIG layout '{}': {}", text, st.error().message));
    layout.instances.push_back(in);
  }
  Normalize(layout);
  return layout;
}

}  // namespace tidal::mig
