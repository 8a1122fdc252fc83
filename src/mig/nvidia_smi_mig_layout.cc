// -lgi rows to validated layouts, and the built-in geometry checked against
// what -lgip/-lgipp report; the readers are in nvidia_smi_mig.cc.
#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "mig/nvidia_smi_mig.h"

namespace tidal::mig {

Result<std::map<int, Layout>> LayoutsFromLgi(const std::vector<GpuInstanceRow>& rows, const Geometry& g, DriverCaps caps) {
  std::map<int, Layout> out;
  for (const GpuInstanceRow& r : rows) {
    const std::string where = fmt::format("{}: GPU {} instance {}", r.at.ToString(), r.gpu, r.instance_id);
    const int p = g.FindProfileById(r.profile_id);
    if (p < 0) {
      std::vector<std::string> ids;
      for (const Profile& pr : g.profiles) ids.push_back(fmt::format("{} {}", pr.gi_profile_id, pr.name));
      return MakeError(ErrorCode::kInvalidArgument, "{}: profile ID {} is not a GPU instance profile of {} (it has {}); is this output from another GPU model?",
                       where, r.profile_id, g.model, fmt::join(ids, ", "));
    }
    const Profile& pr = g.profile(p);
    if (pr.name != r.name || pr.memory_slices != r.size) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "{}: '{}' (ID {}, size {}) is not {}'s profile {}, which is {} of size {}: the output comes from another GPU model; "
                       "read it with that model's geometry",
                       where, r.name, r.profile_id, r.size, g.model, r.profile_id, pr.name, pr.memory_slices);
    }
    Layout& layout = out[r.gpu];
    const Instance in{p, r.start};
    if (Status st = CanAdd(g, layout, in, caps); !st) {
      return MakeError(ErrorCode::kInvalidArgument, "{}: not a valid {} layout: {}", where, g.model, st.error().message);
    }
    layout.instances.push_back(in);
  }
  for (auto& [gpu, layout] : out) Normalize(layout);
  return out;
}

Status CheckGeometry(const Geometry& g, const std::vector<GiProfileRow>& lgip, const std::vector<PlacementRow>& lgipp) {
  std::vector<std::string> issues;
  std::map<int, std::vector<const GiProfileRow*>> by_gpu;
  std::map<int, std::vector<const PlacementRow*>> placed;
  for (const GiProfileRow& r : lgip) by_gpu[r.gpu].push_back(&r);
  for (const PlacementRow& r : lgipp) placed[r.gpu].push_back(&r);
  if (!lgip.empty() && !lgipp.empty()) {
    for (const auto& [gpu, rows] : by_gpu)
      if (!placed.contains(gpu)) issues.push_back(fmt::format("{}: GPU {} has profiles but no placements in the -lgipp output", rows[0]->at.ToString(), gpu));
    for (const auto& [gpu, rows] : placed)
      if (!by_gpu.contains(gpu)) issues.push_back(fmt::format("{}: GPU {} has placements but no profiles in the -lgip output", rows[0]->at.ToString(), gpu));
  }
  for (const auto& [gpu, rows] : by_gpu) {
    std::set<int> seen;
    for (const GiProfileRow* r : rows) {
      const int p = g.FindProfile(r->name);
      if (p < 0) {
        issues.push_back(fmt::format("{}: GPU {} has profile {} (ID {}), which tidal's geometry lacks", r->at.ToString(), gpu, r->name, r->id));
        continue;
      }
      seen.insert(p);
      const Profile& pr = g.profile(p);
      if (r->id != pr.gi_profile_id)
        issues.push_back(fmt::format("{}: GPU {} gives {} the ID {}, tidal's geometry {}", r->at.ToString(), gpu, pr.name, r->id, pr.gi_profile_id));
      if (r->total != pr.max_instances)
        issues.push_back(fmt::format("{}: GPU {} allows {} {} instances, tidal's geometry {}", r->at.ToString(), gpu, r->total, pr.name, pr.max_instances));
    }
    for (size_t p = 0; p < g.profiles.size(); ++p)
      if (!seen.contains(static_cast<int>(p)))
        issues.push_back(fmt::format("{}: GPU {} does not list {} (ID {}): the driver may be too old for it; tidal must not plan it there",
                                     rows[0]->at.ToString(), gpu, g.profiles[p].name, g.profiles[p].gi_profile_id));
  }
  for (const auto& [gpu, rows] : placed) {
    std::set<int> seen;
    for (const PlacementRow* r : rows) {
      const int p = g.FindProfileById(r->profile_id);
      if (p < 0) {
        issues.push_back(fmt::format("{}: GPU {} places profile ID {}, which tidal's geometry lacks", r->at.ToString(), gpu, r->profile_id));
        continue;
      }
      seen.insert(p);
      const Profile& pr = g.profile(p);
      if (r->starts != pr.starts || r->size != pr.memory_slices)
        issues.push_back(fmt::format("{}: GPU {} places {} (ID {}) at {{{}}}:{}, tidal's geometry at {{{}}}:{}", r->at.ToString(), gpu, pr.name,
                                     r->profile_id, fmt::join(r->starts, ","), r->size, fmt::join(pr.starts, ","), pr.memory_slices));
    }
    for (size_t p = 0; p < g.profiles.size(); ++p)
      if (!seen.contains(static_cast<int>(p)))
        issues.push_back(fmt::format("{}: GPU {} gives no placements for {} (ID {})", rows[0]->at.ToString(), gpu, g.profiles[p].name,
                                     g.profiles[p].gi_profile_id));
  }
  if (issues.empty()) return {};
  const bool alien = !lgip.empty() && std::none_of(lgip.begin(), lgip.end(), [&](const GiProfileRow& r) { return g.FindProfile(r.name) >= 0; });
  return MakeError(ErrorCode::kFailedPrecondition,
                   "tidal's {} MIG geometry (src/mig/geometry.cc) disagrees with what the GPU reports in {} place{}; {}:\n  {}", g.model,
                   issues.size(), issues.size() == 1 ? "" : "s",
                   alien ? fmt::format("none of the GPU's profiles is a {} profile: the output is from another GPU model", g.model)
                         : "fix the geometry or check the GPU model",
                   fmt::join(issues, "\n  "));
}

}  // namespace tidal::mig
