// ClusterState's MIG part: devices in MIG mode, their layouts, and the jobs
// that hold their instances (cluster_state.h, MigDevice).
//
// A MIG job's assignment names instances (MigSlice). Binding one takes an
// existing free instance of that profile and start or, where the layout
// rules allow it, creates the instance, destroying free instances in its way
// (held ones never are; NVIDIA lets GPU instances be created and destroyed
// one at a time while the others run). A fully free device not yet in MIG
// mode is put into MIG mode first (a mode change, which needs the device
// idle). Unbinding frees the instance and leaves it in the layout, ready for
// the next job of that profile; changing or clearing layouts is
// SetMigLayout / DisableMig.
#include <algorithm>
#include <map>

#include "cluster/cluster_state.h"

namespace tidal {

int MigDevice::FindInstance(int32_t profile, int32_t start) const {
  for (size_t i = 0; i < layout.instances.size(); ++i)
    if (layout.instances[i].profile == profile && layout.instances[i].start == start) return static_cast<int>(i);
  return -1;
}

int MigDevice::CountBusyCompute() const {
  int sum = 0;
  for (size_t i = 0; i < owner.size(); ++i)
    if (owner[i] != kNoOwner) sum += geometry->profile(layout.instances[i].profile).compute;
  return sum;
}

namespace {

// What binding `slice` does to the device state `d` (a copy while
// checking): takes the free instance of that profile and start, or creates
// it — destroying free instances in its way, never held ones. Adds the
// instances created and destroyed to the counters given.
Status TakeSlice(MigDevice& d, const MigSlice& slice, JobId job, const std::string& where, int64_t* created = nullptr,
                 int64_t* destroyed = nullptr) {
  const mig::Geometry& g = *d.geometry;
  if (slice.profile < 0 || slice.profile >= static_cast<int32_t>(g.profiles.size()))
    return MakeError(ErrorCode::kInvalidArgument, "{}: MIG profile #{} does not exist on {}", where, slice.profile, g.model);
  int i = d.FindInstance(slice.profile, slice.start);
  if (i < 0) {
    const mig::Instance in{slice.profile, slice.start};
    MigDevice kept{d.geometry, {}, {}, d.busy};  // only free instances go
    int64_t gone = 0;
    for (size_t k = 0; k < d.layout.instances.size(); ++k) {
      const bool in_the_way = (mig::InstanceMask(g, d.layout.instances[k]) & mig::InstanceMask(g, in)) != 0;
      if (in_the_way && d.owner[k] == MigDevice::kNoOwner) {
        ++gone;
        continue;
      }
      kept.layout.instances.push_back(d.layout.instances[k]);
      kept.owner.push_back(d.owner[k]);
    }
    if (auto st = mig::CanAdd(g, kept.layout, in); !st)
      return MakeError(ErrorCode::kUnschedulable, "{}: cannot create {}@{}: {}", where, g.profile(slice.profile).name, slice.start,
                       st.error().message);
    kept.layout.instances.push_back(in);
    kept.owner.push_back(MigDevice::kNoOwner);
    d = std::move(kept);
    i = static_cast<int>(d.layout.instances.size()) - 1;
    if (created) ++*created;
    if (destroyed) *destroyed += gone;
  }
  if (d.owner[static_cast<size_t>(i)] != MigDevice::kNoOwner)
    return MakeError(ErrorCode::kUnschedulable, "{}: instance {}@{} is held by job {}", where, g.profile(slice.profile).name, slice.start,
                     d.owner[static_cast<size_t>(i)]);
  d.owner[static_cast<size_t>(i)] = job;
  d.busy += g.profile(slice.profile).compute;
  return Ok();
}

// Sorts instances by start slice, owners along.
void NormalizeDevice(MigDevice& d) {
  std::vector<size_t> order(d.layout.instances.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return d.layout.instances[a].start < d.layout.instances[b].start; });
  MigDevice out{d.geometry, {}, {}, d.busy};
  for (size_t i : order) {
    out.layout.instances.push_back(d.layout.instances[i]);
    out.owner.push_back(d.owner[i]);
  }
  d = std::move(out);
}

}  // namespace

Status ClusterState::CanBindMig(const NodeAssignment& a) const {
  std::map<int32_t, MigDevice> scratch;
  for (const MigSlice& s : a.mig) {
    const std::string where = fmt::format("node '{}' GPU {}", names_[a.node], s.gpu);
    if (s.gpu < 0 || s.gpu >= gpu_count_[a.node])
      return MakeError(ErrorCode::kInvalidArgument, "placement names GPU {} on node '{}', which has {}", s.gpu, names_[a.node],
                       gpu_count_[a.node]);
    auto it = scratch.find(s.gpu);
    if (it == scratch.end()) {
      MigDevice d;
      if (const MigDevice* cur = mig_device(a.node, s.gpu)) {
        d = *cur;
      } else {
        d.geometry = mig::FindGeometry(models_.Name(gpu_model_[a.node]));
        if (!d.geometry)
          return MakeError(ErrorCode::kUnresolvable, "{}: a {} has no MIG mode", where, models_.Name(gpu_model_[a.node]));
        if (gpu_free_[static_cast<size_t>(gpu_offset_[a.node] + s.gpu)] != kMilliPerGpu)
          return MakeError(ErrorCode::kUnschedulable, "{}: not in MIG mode and not idle, so it cannot enter MIG mode", where);
      }
      it = scratch.emplace(s.gpu, std::move(d)).first;
    }
    TIDAL_RETURN_IF_ERROR(TakeSlice(it->second, s, /*job=*/0, where));
  }
  for (int32_t dev : a.gpus) {
    if (mig_device(a.node, dev) || scratch.contains(dev))
      return MakeError(ErrorCode::kInvalidArgument, "node '{}' GPU {} is in MIG mode: milli-GPU cannot be taken from it", names_[a.node], dev);
  }
  return Ok();
}

void ClusterState::ApplyMig(const NodeAssignment& a, JobId job, int sign) {
  const NodeId n = a.node;
  for (const MigSlice& s : a.mig) {
    if (sign > 0 && !mig_device(n, s.gpu)) {
      (void)SetMigLayout(n, s.gpu, mig::Layout{});  // checked by CanBindMig
    }
    MigDevice& d = mig_[static_cast<size_t>(mig_index_[static_cast<size_t>(gpu_offset_[n] + s.gpu)])];
    const int compute = d.geometry->profile(s.profile).compute;
    if (sign > 0) {
      if (d.busy == 0) --idle_mig_gpus_;  // checked by CanBindMig: the slice is taken
      int64_t created = 0;
      const int64_t destroyed = mig_counters_.instances_destroyed;
      (void)TakeSlice(d, s, job, "", &created, &mig_counters_.instances_destroyed);
      if (created > 0 || mig_counters_.instances_destroyed != destroyed) ++mig_layout_version_;
      if (created > 0) {
        mig_counters_.instances_created += created;
        NormalizeDevice(d);
      }
      mig_idle_compute_ -= compute;
      node_mig_idle_compute_[static_cast<size_t>(n)] -= compute;
    } else {
      const int i = d.FindInstance(s.profile, s.start);
      if (i >= 0 && d.owner[static_cast<size_t>(i)] == job) {
        d.owner[static_cast<size_t>(i)] = MigDevice::kNoOwner;
        d.busy -= compute;
        mig_idle_compute_ += compute;
        node_mig_idle_compute_[static_cast<size_t>(n)] += compute;
        if (d.busy == 0) ++idle_mig_gpus_;
      }
    }
  }
  ++version_[n];
}

Status ClusterState::SetMigLayout(NodeId n, int32_t gpu, const mig::Layout& layout_in) {
  if (n < 0 || n >= num_nodes() || gpu < 0 || gpu >= gpu_count_[n])
    return MakeError(ErrorCode::kInvalidArgument, "SetMigLayout: no GPU {} on node #{}", gpu, n);
  const std::string where = fmt::format("node '{}' GPU {}", names_[n], gpu);
  const size_t flat = static_cast<size_t>(gpu_offset_[n] + gpu);
  const MigDevice* cur = mig_device(n, gpu);
  const mig::Geometry* g = cur ? cur->geometry : mig::FindGeometry(models_.Name(gpu_model_[n]));
  if (!g) return MakeError(ErrorCode::kUnresolvable, "{}: a {} has no MIG mode", where, models_.Name(gpu_model_[n]));
  if (!cur && cordoned(n))
    return MakeError(ErrorCode::kFailedPrecondition, "{}: node '{}' is cordoned (drained); its GPUs do not enter MIG mode until it is uncordoned",
                     where, names_[n]);
  if (!cur && gpu_free_[flat] != kMilliPerGpu)
    return MakeError(ErrorCode::kFailedPrecondition, "{}: jobs hold {} milli-GPU; MIG mode needs the GPU idle", where,
                     kMilliPerGpu - gpu_free_[flat]);
  mig::Layout layout = layout_in;
  mig::Normalize(layout);
  if (auto st = mig::ValidateLayout(*g, layout); !st)
    return MakeError(ErrorCode::kInvalidArgument, "{}: {}", where, st.error().message);
  MigDevice next{g, layout, std::vector<JobId>(layout.instances.size(), MigDevice::kNoOwner)};
  int64_t kept = 0;
  if (cur) {
    for (size_t i = 0; i < cur->layout.instances.size(); ++i) {
      const mig::Instance& in = cur->layout.instances[i];
      const int j = next.FindInstance(in.profile, in.start);
      if (j >= 0) {
        next.owner[static_cast<size_t>(j)] = cur->owner[i];
        if (cur->owner[i] != MigDevice::kNoOwner) next.busy += g->profile(in.profile).compute;
        ++kept;
      } else if (cur->owner[i] != MigDevice::kNoOwner) {
        return MakeError(ErrorCode::kFailedPrecondition, "{}: instance {}@{} is held by job {}; release it before re-partitioning",
                         where, g->profile(in.profile).name, in.start, cur->owner[i]);
      }
    }
    mig_counters_.instances_destroyed += static_cast<int64_t>(cur->layout.instances.size()) - kept;
    idle_mig_gpus_ += (next.busy == 0) - (cur->busy == 0);
    mig_[static_cast<size_t>(mig_index_[flat])] = std::move(next);
  } else {
    if (mig_index_.empty()) mig_index_.assign(gpu_free_.size(), -1);
    const int32_t old_whole = free_whole_[n];
    TakeDevice(n, gpu, kMilliPerGpu);
    if (topo_ && free_whole_[n] != old_whole) UpdateHostAggregates(n, old_whole);
    int32_t slot;
    if (!mig_free_slots_.empty()) {
      slot = mig_free_slots_.back();
      mig_free_slots_.pop_back();
      mig_[static_cast<size_t>(slot)] = std::move(next);
    } else {
      slot = static_cast<int32_t>(mig_.size());
      mig_.push_back(std::move(next));
    }
    mig_index_[flat] = slot;
    ++mig_gpus_;
    ++idle_mig_gpus_;  // a device new to MIG mode holds no job
    if (node_mig_gpus_.size() < static_cast<size_t>(num_nodes())) {
      node_mig_gpus_.resize(static_cast<size_t>(num_nodes()), 0);
      node_mig_idle_compute_.resize(static_cast<size_t>(num_nodes()), 0);
    }
    ++node_mig_gpus_[static_cast<size_t>(n)];
    node_mig_idle_compute_[static_cast<size_t>(n)] += mig::kComputeSlices;
    ++mig_counters_.mode_changes;
    mig_idle_compute_ += mig::kComputeSlices;
  }
  mig_counters_.instances_created += static_cast<int64_t>(layout.instances.size()) - kept;
  ++version_[n];
  ++mig_layout_version_;
  return Ok();
}

Status ClusterState::DisableMig(NodeId n, int32_t gpu) {
  const MigDevice* cur = (n >= 0 && n < num_nodes() && gpu >= 0 && gpu < gpu_count_[n]) ? mig_device(n, gpu) : nullptr;
  if (!cur) return MakeError(ErrorCode::kFailedPrecondition, "DisableMig: GPU {} on node #{} is not in MIG mode", gpu, n);
  for (size_t i = 0; i < cur->owner.size(); ++i) {
    if (cur->owner[i] != MigDevice::kNoOwner)
      return MakeError(ErrorCode::kFailedPrecondition, "node '{}' GPU {}: instance held by job {}; MIG mode can only be left when idle",
                       names_[n], gpu, cur->owner[i]);
  }
  const size_t flat = static_cast<size_t>(gpu_offset_[n] + gpu);
  mig_counters_.instances_destroyed += static_cast<int64_t>(cur->layout.instances.size());
  mig_free_slots_.push_back(mig_index_[flat]);
  mig_[static_cast<size_t>(mig_index_[flat])] = MigDevice{};
  mig_index_[flat] = -1;
  --mig_gpus_;
  --idle_mig_gpus_;  // only an idle device leaves MIG mode
  --node_mig_gpus_[static_cast<size_t>(n)];
  ++mig_counters_.mode_changes;
  mig_idle_compute_ -= mig::kComputeSlices;
  node_mig_idle_compute_[static_cast<size_t>(n)] -= mig::kComputeSlices;
  if (cordoned(n)) {
    // Back to the whole-GPU pool, but the node is drained: into the hold.
    holds_.at(n).gpu_milli[static_cast<size_t>(gpu)] += kMilliPerGpu;
    cordoned_gpu_milli_ += kMilliPerGpu;
  } else {
    const int32_t old_whole = free_whole_[n];
    TakeDevice(n, gpu, -kMilliPerGpu);
    if (topo_ && free_whole_[n] != old_whole) UpdateHostAggregates(n, old_whole);
  }
  ++version_[n];
  ++mig_layout_version_;
  return Ok();
}

Status ClusterState::CheckMigInvariants() const {
  int64_t gpus = 0, idle = 0, idle_gpus = 0;
  std::map<std::pair<size_t, size_t>, JobId> held;  // (mig slot, instance) -> job
  for (const auto& [job, p] : allocations_) {
    for (const auto& a : p.assignments) {
      for (const MigSlice& s : a.mig) {
        const MigDevice* d = mig_device(a.node, s.gpu);
        const int i = d ? d->FindInstance(s.profile, s.start) : -1;
        if (i < 0 || d->owner[static_cast<size_t>(i)] != job)
          return MakeError(ErrorCode::kInternal, "job {}: MIG instance on node '{}' GPU {} is not recorded as its", job, names_[a.node], s.gpu);
        held[{static_cast<size_t>(mig_index_[static_cast<size_t>(gpu_offset_[a.node] + s.gpu)]), static_cast<size_t>(i)}] = job;
      }
    }
  }
  for (NodeId n = 0; n < num_nodes(); ++n) {
    int32_t on_node = 0, idle_on_node = 0;
    for (int32_t d = 0; d < gpu_count(n); ++d) {
      const MigDevice* md = mig_device(n, d);
      on_node += md != nullptr;
      if (md) idle_on_node += mig::kComputeSlices - md->CountBusyCompute();
    }
    if (on_node != mig_gpus(n))
      return MakeError(ErrorCode::kInternal, "node '{}': {} GPUs in MIG mode, counted {}", names_[n], on_node, mig_gpus(n));
    if (idle_on_node != mig_idle_compute(n))
      return MakeError(ErrorCode::kInternal, "node '{}': {} idle MIG compute slices recorded, counted {}", names_[n],
                       mig_idle_compute(n), idle_on_node);
  }
  for (size_t f = 0; f < mig_index_.size(); ++f) {
    if (mig_index_[f] < 0) continue;
    const MigDevice& d = mig_[static_cast<size_t>(mig_index_[f])];
    ++gpus;
    if (auto st = mig::ValidateLayout(*d.geometry, d.layout); !st)
      return MakeError(ErrorCode::kInternal, "MIG device #{}: invalid layout: {}", f, st.error().message);
    if (d.busy != d.CountBusyCompute())
      return MakeError(ErrorCode::kInternal, "MIG device #{}: {} busy compute slices recorded, {} held", f, d.busy, d.CountBusyCompute());
    idle += mig::kComputeSlices - d.BusyCompute();
    idle_gpus += d.BusyCompute() == 0;
    for (size_t i = 0; i < d.owner.size(); ++i) {
      if (d.owner[i] != MigDevice::kNoOwner && !held.contains({static_cast<size_t>(mig_index_[f]), i}))
        return MakeError(ErrorCode::kInternal, "MIG device #{}: instance {} owned by job {}, which holds no such allocation", f, i, d.owner[i]);
    }
  }
  if (gpus != mig_gpus_ || idle != mig_idle_compute_ || idle_gpus != idle_mig_gpus_)
    return MakeError(ErrorCode::kInternal, "MIG totals drifted (gpus {} vs {}, idle compute {} vs {}, idle GPUs {} vs {})",
                     mig_gpus_, gpus, mig_idle_compute_, idle, idle_mig_gpus_, idle_gpus);
  return Ok();
}

}  // namespace tidal
