#include "framework/framework.h"

#include <algorithm>

namespace tidal {

Result<PodRequest> ResolveRequest(const Job& job, const GpuModelRegistry& models) {
  PodRequest r;
  r.job = &job;
  for (const auto& m : job.gpu_spec) {
    const GpuModelId id = models.Find(m);
    if (id == kNoGpuModel) {
      std::string known;
      for (size_t i = 0; i < models.size(); ++i)
        known += (known.empty() ? "" : ", ") + models.Name(static_cast<GpuModelId>(i));
      return MakeError(ErrorCode::kUnresolvable,
                       "{} (job '{}'): GPU model '{}' is not in this cluster (models: {}); fix the "
                       "gpu_spec or add such nodes",
                       job.source.empty() ? "job" : job.source, job.name, m, known);
    }
    r.gpu_spec.allowed.push_back(id);
    r.gpu_spec_key += (r.gpu_spec_key.empty() ? "" : "|") + m;
  }
  return r;
}

bool Profile::Disable(std::string_view plugin_name) {
  bool found = false;
  std::erase_if(filters, [&](FilterPlugin* p) { return p->name() == plugin_name && (found = true); });
  std::erase_if(scores, [&](const WeightedScore& s) { return s.plugin->name() == plugin_name && (found = true); });
  std::erase_if(reserves, [&](ReservePlugin* p) { return p->name() == plugin_name && (found = true); });
  if (device_select && device_select->name() == plugin_name) device_select = nullptr, found = true;
  if (gang && gang->name() == plugin_name) gang = nullptr, found = true;
  if (mig && mig->name() == plugin_name) mig = nullptr, found = true;
  return found;
}

void Framework::Time(const Plugin* p, std::chrono::steady_clock::time_point start) {
  auto& t = timing_[p];
  if (t.name.empty()) t.name = std::string(p->name());
  ++t.cycles;
  t.total += std::chrono::steady_clock::now() - start;
}

std::vector<PluginTiming> Framework::Timings() const {
  std::vector<PluginTiming> out;
  for (const auto& [p, t] : timing_) out.push_back(t);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

std::unexpected<Error> Framework::NoFit(const CycleContext& ctx, const PodRequest& pod) const {
  // Would it fit on some node if that node were empty? If not, waiting or
  // preempting cannot help: say which resource no node has enough of.
  const ClusterState& c = ctx.cluster;
  const Job& j = *pod.job;
  int64_t gpus_of_allowed_models = 0;
  bool any = false;
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    const bool model_ok = j.num_gpu == 0 || (c.gpu_count(n) > 0 && pod.gpu_spec.Allows(c.gpu_model(n)));
    if (!model_ok) continue;
    gpus_of_allowed_models += c.gpu_count(n);
    if (c.cpu_capacity(n) >= j.cpu_milli && c.memory_capacity(n) >= j.memory_mib &&
        c.gpu_count(n) >= j.num_gpu)
      any = true;
  }
  if (!any && (j.single_node || gpus_of_allowed_models < j.num_gpu)) {
    return std::unexpected(Error{
        ErrorCode::kUnresolvable,
        fmt::format("job '{}' ({}): no node could ever host it (asks {} milli-CPU, {} MiB, {} x {} "
                    "milli-GPU{}{}); shrink the request or add capacity",
                    j.name, j.source, j.cpu_milli, j.memory_mib, j.num_gpu, j.gpu_milli,
                    pod.gpu_spec_key.empty() ? "" : " of ", pod.gpu_spec_key)});
  }
  return std::unexpected(Error{ErrorCode::kUnschedulable,
                               fmt::format("job '{}': no node has room now", j.name)});
}

Result<Placement> Framework::ScheduleMig(const CycleContext& ctx, const PodRequest& pod) {
  const Job& j = *pod.job;
  if (profile_.mig == nullptr)
    return MakeError(ErrorCode::kUnresolvable, "job '{}' ({}): asks for MIG instance {} but profile '{}' has no MIG placer", j.name,
                     j.source, j.mig_profile, profile_.name);
  const auto start = std::chrono::steady_clock::now();
  auto p = profile_.mig->PlaceMig(ctx, pod);
  Time(profile_.mig, start);
  if (p) return std::move(*p);
  // Could any node ever host it: a GPU with that profile, CPU and memory?
  const ClusterState& c = ctx.cluster;
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    if (c.gpu_count(n) == 0 || !pod.gpu_spec.Allows(c.gpu_model(n))) continue;
    const mig::Geometry* g = mig::FindGeometry(c.models().Name(c.gpu_model(n)));
    if (g && g->FindProfile(j.mig_profile) >= 0 && c.cpu_capacity(n) >= j.cpu_milli && c.memory_capacity(n) >= j.memory_mib)
      return MakeError(ErrorCode::kUnschedulable, "job '{}': no GPU has a free {} instance or room for one now", j.name, j.mig_profile);
  }
  return MakeError(ErrorCode::kUnresolvable,
                   "job '{}' ({}): no node has a MIG-capable GPU with profile {} (and {} milli-CPU, {} MiB); use a profile of "
                   "the cluster's GPUs (nvidia-smi mig -lgip lists them)",
                   j.name, j.source, j.mig_profile, j.cpu_milli, j.memory_mib);
}

Result<Placement> Framework::Schedule(const CycleContext& ctx, const PodRequest& pod) {
  if (pod.job->IsMig()) return ScheduleMig(ctx, pod);
  if (profile_.gang != nullptr && profile_.gang->PlacesWholeGpuJobs() && pod.num_gpu() > 0 &&
      pod.gpu_milli() == kMilliPerGpu) {
    std::string why;
    CycleContext cx = ctx;
    cx.deferred = &why;
    const auto start = std::chrono::steady_clock::now();
    auto p = profile_.gang->PlaceGang(cx, pod);
    Time(profile_.gang, start);
    if (p) return std::move(*p);
    if (!why.empty()) return MakeError(ErrorCode::kDeferred, "job '{}': {}", pod.job->name, why);
    return NoFit(ctx, pod);
  }
  auto single = ScheduleOnOneNode(ctx, pod);
  if (single || pod.job->single_node || profile_.gang == nullptr) return single;
  const auto start = std::chrono::steady_clock::now();
  auto gang = profile_.gang->PlaceGang(ctx, pod);
  Time(profile_.gang, start);
  if (gang) return std::move(*gang);
  return NoFit(ctx, pod);
}

Result<Placement> Framework::ScheduleOnOneNode(const CycleContext& ctx, const PodRequest& pod) {
  const ClusterState& c = ctx.cluster;
  feasible_.clear();
  {
    // Filters run node by node (all filters per node) so a cheap early
    // rejection skips the rest; timing is charged to the filter phase.
    const auto start = std::chrono::steady_clock::now();
    for (NodeId n = 0; n < c.num_nodes(); ++n) {
      bool ok = true;
      for (FilterPlugin* f : profile_.filters) {
        if (!f->Filter(ctx, pod, n)) {
          ok = false;
          break;
        }
      }
      if (ok) feasible_.push_back(n);
    }
    if (!profile_.filters.empty()) Time(profile_.filters.front(), start);
  }
  if (feasible_.empty()) return NoFit(ctx, pod);

  NodeId chosen = feasible_.front();
  if (feasible_.size() > 1) {
    total_.assign(feasible_.size(), 0);
    for (const WeightedScore& ws : profile_.scores) {
      const auto start = std::chrono::steady_clock::now();
      ws.plugin->PreScore(ctx, pod, feasible_);
      scratch_.resize(feasible_.size());
      for (size_t i = 0; i < feasible_.size(); ++i) scratch_[i] = ws.plugin->Score(ctx, pod, feasible_[i]);
      ws.plugin->Normalize(scratch_);
      for (size_t i = 0; i < feasible_.size(); ++i) total_[i] += ws.weight * scratch_[i];
      Time(ws.plugin, start);
    }
    const int64_t best = *std::max_element(total_.begin(), total_.end());
    best_.clear();
    for (size_t i = 0; i < feasible_.size(); ++i)
      if (total_[i] == best) best_.push_back(feasible_[i]);
    if (best_.size() == 1) {
      chosen = best_.front();
    } else if (node_rank_.size() == static_cast<size_t>(c.num_nodes())) {
      chosen = *std::min_element(best_.begin(), best_.end(),
                                 [&](NodeId a, NodeId b) { return node_rank_[a] < node_rank_[b]; });
    } else {
      // Same distribution as kube-scheduler's reservoir sampling in selectHost.
      chosen = best_[ctx.rng.Uniform(best_.size())];
    }
  }
  if (profile_.device_select == nullptr) {
    return MakeError(ErrorCode::kFailedPrecondition, "profile '{}' has no device-select plugin",
                     profile_.name);
  }
  const auto start = std::chrono::steady_clock::now();
  auto assignment = profile_.device_select->SelectDevices(ctx, pod, chosen);
  Time(profile_.device_select, start);
  if (!assignment) {
    return MakeError(ErrorCode::kInternal,
                     "profile '{}': node '{}' passed the filters for job '{}' but device selection "
                     "found no devices; the filter and selector disagree",
                     profile_.name, c.node_name(chosen), pod.job->name);
  }
  Placement p;
  p.assignments.push_back(std::move(*assignment));
  return p;
}

void Framework::NotifyBound(const ClusterState& cluster, const Job& job, const Placement& p) {
  for (ReservePlugin* r : profile_.reserves) r->Reserve(cluster, job, p);
}

void Framework::NotifyUnbound(const ClusterState& cluster, const Job& job, const Placement& p) {
  for (ReservePlugin* r : profile_.reserves) r->Unreserve(cluster, job, p);
}

}  // namespace tidal
