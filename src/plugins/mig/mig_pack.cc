#include "plugins/mig/mig_pack.h"

#include <cmath>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mig/packer.h"

namespace tidal::plugins {
namespace {

// A MIG device's state as a placement sees it.
struct SeenState {
  GpuModelId model;
  uint32_t held, free;  // mig::AddableMemo::Key of the held / the free instances
  friend bool operator==(const SeenState&, const SeenState&) = default;
};
struct SeenHash {
  std::size_t operator()(const SeenState& s) const noexcept {
    return std::hash<uint64_t>{}((static_cast<uint64_t>(s.held) << 32 | s.free) * 0x9E3779B97F4A7C15ULL ^
                                 static_cast<uint64_t>(static_cast<uint32_t>(s.model)));
  }
};

struct Candidate {
  NodeId node = -1;
  int32_t gpu = -1;
  mig::SlotChoice choice;
  int busy = 0;  // compute slices held on that GPU before
};

}  // namespace

std::optional<Placement> MigPack::PlaceMig(const CycleContext& ctx, const PodRequest& pod) {
  const ClusterState& c = ctx.cluster;
  const Job& j = *pod.job;
  std::optional<Candidate> best;
  NodeId idle_node = -1;
  int32_t idle_gpu = -1;
  const mig::Geometry* idle_geometry = nullptr;
  const mig::Geometry* mix_geometry = nullptr;
  mig::RequestMix mix;
  std::vector<std::optional<const mig::Geometry*>> geometry_of;
  std::vector<int> profile_of;  // the job's profile index, per GPU model
  std::unordered_map<uint64_t, std::vector<mig::SlotChoice>> deltas;  // by GPU model and held layout, this pass
  std::unordered_set<SeenState, SeenHash> seen;
  // The node's geometry, and the job's profile index in `profile`; null
  // when the node cannot take the job: no GPU of an allowed model, drained
  // (CanBind would refuse its idle instances; a job asking no CPU or memory
  // would otherwise pick one), short of CPU or memory, no MIG mode for its
  // model or no such profile in it.
  auto usable = [&](NodeId n, int& profile) -> const mig::Geometry* {
    if (c.gpu_count(n) == 0 || !pod.gpu_spec.Allows(c.gpu_model(n))) return nullptr;
    if (c.cordoned(n)) return nullptr;
    if (c.cpu_free(n) < j.cpu_milli || c.memory_free(n) < j.memory_mib) return nullptr;
    // The geometry and profile by GPU model, looked up once per model (name
    // lookups per node dominated a pass over a large fleet).
    const mig::Geometry* g = nullptr;
    profile = -1;
    if (const GpuModelId id = c.gpu_model(n); id < 0) {
      g = mig::FindGeometry(c.models().Name(id));
      profile = g ? g->FindProfile(j.mig_profile) : -1;
    } else {
      const auto model = static_cast<size_t>(id);
      if (model >= geometry_of.size()) geometry_of.resize(model + 1, std::nullopt), profile_of.resize(model + 1, -1);
      if (!geometry_of[model]) {
        geometry_of[model] = mig::FindGeometry(c.models().Name(id));
        profile_of[model] = *geometry_of[model] ? (*geometry_of[model])->FindProfile(j.mig_profile) : -1;
      }
      g = *geometry_of[model];
      profile = profile_of[model];
    }
    return profile < 0 ? nullptr : g;
  };
  // First a slot on a GPU in MIG mode (most requests find one), so the
  // nodes without one are not read at all then.
  for (NodeId n : MigNodes(c)) {
    if (c.mig_idle_compute(n) == 0) continue;  // no instance to take nor room for one (before the node's checks)
    int profile = -1;
    const mig::Geometry* g = usable(n, profile);
    if (!g) continue;
    // No GPU here has the compute for a new instance.
    if (c.mig_idle_compute(n) < g->profile(profile).compute) continue;
    if (policy_ == MigPackPolicy::kFragAware && g != mix_geometry) {  // the mix, once per GPU model
      mix_geometry = g;
      mix.weight.assign(g->profiles.size(), 1.0);
      for (size_t k = 0; k < g->profiles.size(); ++k)
        if (auto it = bound_.find(g->profiles[k].name); it != bound_.end()) mix.weight[k] += static_cast<double>(it->second);
    }
    for (int32_t d = 0; d < c.gpu_count(n); ++d) {
      const MigDevice* md = c.mig_device(n, d);
      if (!md) continue;
      // A new instance needs its compute slices beside the held ones (the
      // packers lay out the held instances only): a full GPU is no candidate.
      if (md->BusyCompute() + g->profile(profile).compute > mig::kComputeSlices) continue;
      std::optional<mig::SlotChoice> choice;
      if (policy_ == MigPackPolicy::kFragAware) {
        uint32_t held_key = 0, free_key = 0;  // the held and the free instances
        for (size_t i = 0; i < md->owner.size(); ++i)
          (md->owner[i] != MigDevice::kNoOwner ? held_key : free_key) |= mig::AddableMemo::Key(md->layout.instances[i]);
        // A GPU in the state of one seen before in this call (same model,
        // same held and free instances) offers the same choice at a later
        // place, which loses every tie: it cannot be better.
        if (!seen.insert(SeenState{c.gpu_model(n), held_key, free_key}).second) continue;
        // The increases depend on the held instances only: computed once per
        // held layout in a pass (thousands of GPUs share a few layouts).
        mig::Layout held;  // built only when its layout is new in this pass
        auto held_only = [&]() -> const mig::Layout& {
          for (size_t i = 0; i < md->owner.size(); ++i)
            if (md->owner[i] != MigDevice::kNoOwner) held.instances.push_back(md->layout.instances[i]);
          return held;
        };
        const uint64_t key = static_cast<uint64_t>(static_cast<uint32_t>(c.gpu_model(n))) << 32 | held_key;
        auto it = deltas.find(key);
        if (it == deltas.end()) it = deltas.emplace(key, mig::SlotDeltas(MemoFor(*g), held_only(), profile, mix)).first;
        for (mig::SlotChoice sc : it->second) {
          const int free = md->FindInstance(sc.instance.profile, sc.instance.start);
          sc.reuse = free >= 0 && md->owner[static_cast<size_t>(free)] == MigDevice::kNoOwner;
          if (!choice || mig::BetterSlot(sc, *choice)) choice = sc;
        }
      } else {
        mig::GpuSlots slots{&md->layout, {}};
        for (JobId o : md->owner) slots.held.push_back(o != MigDevice::kNoOwner);
        choice = mig::FirstSlot(*g, slots, profile);
      }
      if (!choice) continue;
      Candidate cand{n, d, *choice, md->BusyCompute()};
      if (policy_ == MigPackPolicy::kFirstFit) {
        best = cand;
        break;
      }
      const auto key = [](const Candidate& x) {
        return std::make_tuple(static_cast<int64_t>(std::llround(x.choice.delta * 1e9)), !x.choice.reuse, -x.busy, x.node, x.gpu);
      };
      if (!best || key(cand) < key(*best)) best = cand;
    }
    if (best && policy_ == MigPackPolicy::kFirstFit) break;
  }
  // Then an idle GPU to put into MIG mode: on the node with the fewest free
  // whole GPUs (pack; the first such node on a tie) or the first node (first
  // fit), its first idle GPU (settled below).
  for (NodeId n = 0; !best && n < c.num_nodes(); ++n) {
    if (c.free_whole_gpus(n) == 0) continue;
    if (idle_node >= 0 && !(policy_ == MigPackPolicy::kFragAware && c.free_whole_gpus(n) < c.free_whole_gpus(idle_node))) continue;
    int profile = -1;
    const mig::Geometry* g = usable(n, profile);
    if (!g) continue;
    idle_node = n, idle_gpu = -1, idle_geometry = g;
  }
  if (!best && idle_node >= 0) {
    for (int32_t d = 0; idle_gpu < 0 && d < c.gpu_count(idle_node); ++d)
      if (!c.mig_device(idle_node, d) && c.gpu_free(idle_node)[static_cast<size_t>(d)] == kMilliPerGpu) idle_gpu = d;
    const int profile = idle_geometry->FindProfile(j.mig_profile);
    mig::GpuSlots none;
    auto choice = policy_ == MigPackPolicy::kFragAware ? mig::BestSlot(MemoFor(*idle_geometry), none, profile, {})
                                                       : mig::FirstSlot(*idle_geometry, none, profile);
    if (choice) best = Candidate{idle_node, idle_gpu, *choice, 0};
  }
  if (!best) return std::nullopt;
  NodeAssignment a;
  a.node = best->node;
  a.cpu_milli = j.cpu_milli;
  a.memory_mib = j.memory_mib;
  a.mig = {{best->gpu, best->choice.instance.profile, best->choice.instance.start}};
  return Placement{{std::move(a)}};
}

const std::vector<NodeId>& MigPack::MigNodes(const ClusterState& c) {
  // Which nodes have a GPU in MIG mode moves only with the layouts.
  if (c.instance_id() != mig_nodes_instance_ || c.mig_layout_version() != mig_nodes_version_ || !mig_nodes_known_) {
    mig_nodes_.clear();
    for (NodeId n = 0; n < c.num_nodes(); ++n)
      if (c.mig_gpus(n) > 0) mig_nodes_.push_back(n);
    mig_nodes_instance_ = c.instance_id();
    mig_nodes_version_ = c.mig_layout_version();
    mig_nodes_known_ = true;
  }
  return mig_nodes_;
}

mig::AddableMemo& MigPack::MemoFor(const mig::Geometry& g) {
  auto it = memos_.find(&g);
  if (it == memos_.end()) it = memos_.emplace(&g, mig::AddableMemo(g)).first;
  return it->second;
}

void MigPack::Reserve(const ClusterState&, const Job& job, const Placement&) {
  if (job.IsMig() && seen_.insert(job.id).second) ++bound_[job.mig_profile];
}

void MigPack::Unreserve(const ClusterState&, const Job& job, const Placement&) {
  if (job.IsMig() && seen_.erase(job.id) > 0) --bound_[job.mig_profile];
}

}  // namespace tidal::plugins
