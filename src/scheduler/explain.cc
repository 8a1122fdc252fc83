#include "scheduler/explain.h"

#include <algorithm>

#include "framework/gang.h"
#include "scheduler/preemption.h"

namespace tidal {
namespace {

std::string Gpus(int64_t milli) {
  return milli % kMilliPerGpu == 0 ? fmt::format("{}", milli / kMilliPerGpu)
                                   : fmt::format("{:.3f}", static_cast<double>(milli) / kMilliPerGpu);
}

std::string Amount(const std::string& resource, int64_t v) {
  if (resource == "gpu" || resource.starts_with("gpu/")) return Gpus(v) + " " + (resource == "gpu" ? "GPU" : resource.substr(4));
  if (resource == "cpu") return fmt::format("{} cores", static_cast<double>(v) / 1000);
  return fmt::format("{} MiB memory", v);
}

void QuotaCauses(const Job& job, const ExplainContext& ctx, std::vector<BlockingCause>& out) {
  const tenancy::TenantTree& t = *ctx.usage;
  const std::string& name = t.name(ctx.tenant);
  const std::string model = job.gpu_spec.size() == 1 ? job.gpu_spec.front() : std::string();
  for (tenancy::ResourceId r = 0; r < t.num_resources(); ++r) {
    const std::string& res = t.resource_name(r);
    int64_t v = 0;
    if (res == "gpu") v = job.TotalGpuMilli();
    else if (res == "cpu") v = job.cpu_milli;
    else if (res == "memory") v = job.memory_mib;
    else if (!model.empty() && res == "gpu/" + model) v = job.TotalGpuMilli();
    if (v == 0) continue;
    const int64_t avail = t.Available(ctx.tenant, r);
    if (v <= avail) continue;
    const int64_t floor = t.subtree(ctx.tenant, r), used = t.usage(ctx.tenant, r);
    const int64_t own = std::max<int64_t>(0, floor - used);
    const auto& bl = t.quota(ctx.tenant, r).borrowing_limit;
    const std::string why = bl && used + v > floor + *bl
                                ? fmt::format("borrowing limit {}", Amount(res, *bl))
                                : std::string("cohort full");
    out.push_back({"quota",
                   fmt::format("quota: tenant {} needs {}, floor {}, in use {}, own unused {}, borrowable {} ({})", name,
                               Amount(res, v), Amount(res, floor), Amount(res, used), Amount(res, own),
                               Amount(res, std::max<int64_t>(0, avail - own)), why),
                   v - avail, true,
                   res == "cpu" ? "milli-cpu" : res == "memory" ? "MiB" : res.starts_with("gpu") ? "milli-gpu" : res});
  }
}

void CapacityCause(const ClusterState& c, const PodRequest& pod, std::vector<BlockingCause>& out) {
  if (pod.num_gpu() == 0) return;
  const int32_t n = pod.num_gpu();
  auto usable = [&](NodeId x) -> int32_t {
    if (c.gpu_count(x) == 0 || !pod.gpu_spec.Allows(c.gpu_model(x))) return 0;
    if (pod.gpu_milli() >= kMilliPerGpu) return c.free_whole_gpus(x);
    int32_t k = 0;
    for (int32_t f : c.gpu_free(x)) k += f >= pod.gpu_milli();
    return k;
  };
  const PreemptionScope scope = ScopeFor(c, pod);
  if (scope.host_level || !c.has_topology()) {
    int32_t best = 0, total = 0;
    for (NodeId x = 0; x < c.num_nodes(); ++x) {
      const int32_t u = usable(x);
      total += u;
      if (c.gpu_count(x) >= n) best = std::max(best, u);
    }
    if (scope.host_level && pod.job->single_node && best < n) {
      out.push_back({"capacity", fmt::format("capacity: needs one host with {} free GPUs, best host has {} ({} free in all)", n, best, total),
                     n - best, true});
    } else if (!scope.host_level && total < n) {
      out.push_back({"capacity", fmt::format("capacity: needs {} free GPUs, the cluster has {}", n, total), n - total, true});
    } else if (best < n && !pod.job->single_node) {
      out.push_back({"capacity", fmt::format("capacity: no host has {} free GPUs (best {}); {} free in all", n, best, total), 0, true});
    }
    return;
  }
  const topo::Topology& t = c.topology();
  int32_t best = 0;
  std::string best_name;
  for (topo::DomainId d : t.domains_at(scope.level)) {
    const int32_t f = c.domain_free_gpus(d);
    if (f > best) best = f, best_name = t.DomainName(d);
  }
  if (best < n) {
    out.push_back({"topology",
                   fmt::format("topology: needs one {} with {} free GPUs, best {} has {}{}", topo::LevelName(scope.level), n,
                               topo::LevelName(scope.level), best, best_name.empty() ? "" : " (" + best_name + ")"),
                   n - best, true});
  }
}

}  // namespace

std::vector<BlockingCause> ExplainPending(Scheduler& scheduler, const Job& job, const ExplainContext& ctx) {
  std::vector<BlockingCause> out;
  auto pod = ResolveRequest(job, scheduler.cluster().models());
  if (!pod) {
    out.push_back({"gpu-model", "gpu model: " + pod.error().message, 0, false});
    return out;
  }
  if (ctx.usage != nullptr && ctx.tenant != tenancy::kNoTenant) QuotaCauses(job, ctx, out);
  auto tried = scheduler.Probe(job);
  if (!tried) {
    if (tried.error().code == ErrorCode::kDeferred) {
      out.push_back({"placement", "placement: " + tried.error().message, 0, true});
    } else if (tried.error().code == ErrorCode::kUnresolvable) {
      out.push_back({"capacity", "never fits: " + tried.error().message, 0, false});
    } else {
      CapacityCause(scheduler.cluster(), *pod, out);
      if (std::none_of(out.begin(), out.end(), [](const BlockingCause& b) { return b.kind == "capacity" || b.kind == "topology"; })) {
        out.push_back({"capacity", "capacity: " + tried.error().message, 0, true});
      }
    }
  }
  if (ctx.reserved_for != nullptr && ctx.reserved_for != &job) {
    out.push_back({"reservation",
                   ctx.reservation_s >= 0
                       ? fmt::format("reservation: capacity held for job '{}' (starts ~{} s)", ctx.reserved_for->name, ctx.reservation_s)
                       : fmt::format("reservation: capacity held for job '{}'", ctx.reserved_for->name),
                   0, true});
  }
  if (out.empty()) out.push_back({"none", "nothing blocks it now: it starts at the next scheduling pass", 0, true});
  std::stable_sort(out.begin(), out.end(), [](const BlockingCause& a, const BlockingCause& b) { return !a.resolvable && b.resolvable; });
  return out;
}

}  // namespace tidal
