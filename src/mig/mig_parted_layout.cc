// mig-parted entries to tidal layouts (LayoutForEntry) and back
// (WriteMigParted); the reader is in mig_parted.cc.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "mig/mig_parted.h"

namespace tidal::mig {
namespace {

// Places wanted[k..] into `layout`, each at the lowest start that still lets
// the rest fit. `why` keeps the last rule that refused a placement.
bool Place(const Geometry& g, DriverCaps caps, const std::vector<int>& wanted, size_t k, Layout& layout, std::string& why) {
  if (k == wanted.size()) return true;
  const int p = wanted[k];
  // Equal profiles take increasing starts, so no layout is tried twice.
  const int after = k > 0 && wanted[k - 1] == p ? layout.instances.back().start : -1;
  for (int start : g.profile(p).starts) {
    if (start <= after) continue;
    const Instance in{p, start};
    if (Status st = CanAdd(g, layout, in, caps); !st) {
      why = st.error().message;
      continue;
    }
    layout.instances.push_back(in);
    if (Place(g, caps, wanted, k + 1, layout, why)) return true;
    layout.instances.pop_back();
  }
  return false;
}

std::string Names(const Geometry& g) {
  std::vector<std::string> names;
  for (const Profile& p : g.profiles) names.push_back(p.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// "1c.3g.20gb": a compute-instance profile (C of the GPU instance's G slices).
bool ComputeInstanceProfile(std::string_view name) {
  const size_t c = name.find("c.");
  return c != std::string_view::npos && c > 0 && name.substr(0, c).find_first_not_of("0123456789") == std::string_view::npos;
}

bool LabelValue(std::string_view s) {
  const auto alnum = [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'); };
  if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char ch) { return alnum(ch) || ch == '-' || ch == '_' || ch == '.'; });
}

}  // namespace

Result<Layout> LayoutForEntry(const MigPartedEntry& e, const Geometry& g, DriverCaps caps) {
  if (!e.mig_enabled) return Layout{};
  std::vector<int> wanted;
  std::vector<std::string> asked;
  int compute = 0;
  int memory = 0;
  for (const MigDeviceCount& d : e.mig_devices) {
    if (d.count == 0) continue;
    const auto fail = [&](std::string_view why) {
      return MakeError(ErrorCode::kInvalidArgument, "{}:{}: config '{}', mig-devices '{}': {}", e.source, d.line, e.config, d.profile, why);
    };
    if (d.count < 0) return fail(fmt::format("the count {} is negative; counts are whole numbers >= 0", d.count));
    const int p = g.FindProfile(d.profile);
    if (p < 0 && ComputeInstanceProfile(d.profile)) {
      return fail("a compute-instance profile (part of a GPU instance); tidal lays out whole GPU instances: write the GPU instance "
                  "profile, e.g. 3g.40gb for 1c.3g.40gb");
    }
    if (p < 0) {
      return fail(fmt::format("profile not on this GPU: {} has no MIG profile '{}' (it has {}); this entry is for another GPU "
                              "model: give it that model's device-filter, or use {}'s profile names",
                              g.model, d.profile, Names(g), g.model));
    }
    const Profile& pr = g.profile(p);
    if (d.count > pr.max_instances) {
      return fail(fmt::format("{} allows at most {} {} instance{} per GPU; the entry asks for {}", g.model, pr.max_instances, pr.name,
                              pr.max_instances == 1 ? "" : "s", d.count));
    }
    wanted.insert(wanted.end(), static_cast<size_t>(d.count), p);
    asked.push_back(fmt::format("{} x{}", pr.name, d.count));
    compute += pr.compute * d.count;
    memory += pr.memory_slices * d.count;
  }
  const std::string where = fmt::format("{}:{}: config '{}' ({})", e.source, e.line, e.config, fmt::join(asked, ", "));
  if (compute > kComputeSlices) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: needs {} compute slices; a {} has {}: drop instances or take smaller ones", where,
                     compute, g.model, kComputeSlices);
  }
  if (memory > kMemorySlices) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: needs {} memory slices; a {} has {}: drop instances or take smaller ones", where,
                     memory, g.model, kMemorySlices);
  }
  // Largest first: most memory slices, then most compute, then the later
  // (larger) profile of the geometry; equal profiles end up side by side.
  std::sort(wanted.begin(), wanted.end(), [&](int a, int b) {
    const Profile &pa = g.profile(a), &pb = g.profile(b);
    if (pa.memory_slices != pb.memory_slices) return pa.memory_slices > pb.memory_slices;
    if (pa.compute != pb.compute) return pa.compute > pb.compute;
    return a > b;
  });
  Layout layout;
  std::string why;
  if (!Place(g, caps, wanted, 0, layout, why)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{}: these instances cannot all be placed on one {}: every choice of starts breaks a placement rule (the last: "
                     "{}); drop an instance or pick other profiles",
                     where, g.model, why);
  }
  Normalize(layout);
  return layout;
}

Result<std::string> WriteMigParted(std::string_view config_name, const std::map<int, std::optional<Layout>>& gpus, const Geometry& g) {
  if (!LabelValue(config_name)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "mig-parted config name '{}' must be a Kubernetes label value (it becomes nvidia.com/mig.config): 1-63 letters, "
                     "digits, '-', '_' or '.', starting and ending with a letter or digit",
                     config_name.substr(0, 80));
  }
  if (gpus.empty()) return MakeError(ErrorCode::kInvalidArgument, "no GPUs to write: a mig-parted config needs at least one entry");
  struct Group {
    std::optional<std::vector<int>> counts;  // per profile of g; nullopt: MIG off
    std::vector<int> gpus;
    std::vector<std::string> notes;
  };
  std::vector<Group> groups;
  for (const auto& [gpu, layout] : gpus) {
    if (gpu < 0) return MakeError(ErrorCode::kInvalidArgument, "GPU index {} is negative; mig-parted indexes GPUs from 0", gpu);
    std::optional<std::vector<int>> counts;
    std::string note = fmt::format("GPU {}: MIG off", gpu);
    if (layout) {
      if (Status st = ValidateLayout(g, *layout); !st) {
        return MakeError(ErrorCode::kInvalidArgument, "GPU {}: not a valid {} layout, not written: {}", gpu, g.model, st.error().message);
      }
      counts.emplace(g.profiles.size(), 0);
      for (const Instance& in : layout->instances) ++(*counts)[static_cast<size_t>(in.profile)];
      Layout sorted = *layout;
      Normalize(sorted);
      note = fmt::format("GPU {}: {}", gpu, sorted.instances.empty() ? "MIG on, no instances" : FormatLayout(g, sorted));
    }
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& gr) { return gr.counts == counts; });
    if (it == groups.end()) it = groups.insert(groups.end(), Group{counts, {}, {}});
    it->gpus.push_back(gpu);
    it->notes.push_back(std::move(note));
  }
  std::string out =
      "# Written by tidal: the MIG layout tidal wants on each GPU. mig-parted only counts\n"
      "# instances and lets the driver choose their placements; the comments give the\n"
      "# placements tidal planned (one valid choice).\n"
      "version: v1\nmig-configs:\n";
  out += fmt::format("  {}:\n", config_name);
  for (const Group& gr : groups) {
    for (const std::string& note : gr.notes) out += fmt::format("    # {}\n", note);
    out += fmt::format("    - devices: [{}]\n      mig-enabled: {}\n", fmt::join(gr.gpus, ", "), gr.counts ? "true" : "false");
    if (!gr.counts) continue;
    std::string devices;
    for (size_t p = g.profiles.size(); p-- > 0;)
      if ((*gr.counts)[p] > 0) devices += fmt::format("        \"{}\": {}\n", g.profiles[p].name, (*gr.counts)[p]);
    out += devices.empty() ? "      mig-devices: {}\n" : "      mig-devices:\n" + devices;
  }
  return out;
}

}  // namespace tidal::mig
