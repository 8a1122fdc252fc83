#include "sim/tenant_metrics.h"

#include <algorithm>
#include <map>
#include <string>

#include "sim/queue_sim.h"

namespace tidal::sim {

GuaranteeTracker::GuaranteeTracker(const tenancy::TenantTree& tree)
    : tree_(tree),
      usage_(static_cast<size_t>(tree.size()), 0),
      floor_(static_cast<size_t>(tree.size()), 0),
      waiting_(static_cast<size_t>(tree.size())) {
  if (const auto gpu = tree.resource("gpu")) {
    for (tenancy::TenantId t : tree.Leaves()) floor_[static_cast<size_t>(t)] = tree.subtree(t, *gpu);
  }
}

tenancy::TenantId GuaranteeTracker::Of(const Job& j) const { return tree_.Find(j.group); }

void GuaranteeTracker::Waiting(const Job& j, int sign) {
  const tenancy::TenantId t = Of(j);
  if (t == tenancy::kNoTenant) return;
  auto& w = waiting_[static_cast<size_t>(t)];
  if (sign > 0) {
    w.insert(j.TotalGpuMilli());
  } else if (auto it = w.find(j.TotalGpuMilli()); it != w.end()) {
    w.erase(it);
  }
}

void GuaranteeTracker::Running(const Job& j, int sign) {
  const tenancy::TenantId t = Of(j);
  if (t != tenancy::kNoTenant) usage_[static_cast<size_t>(t)] += sign * j.TotalGpuMilli();
}

void GuaranteeTracker::SetTotal(int64_t total_milli) { total_ = total_milli; }

const std::vector<tenancy::TenantId>& GuaranteeTracker::Violating(int64_t free_milli) {
  violating_.clear();
  for (size_t t = 0; t < usage_.size(); ++t) {
    if (waiting_[t].empty() || usage_[t] >= floor_[t]) continue;
    const bool fits_floor = *waiting_[t].begin() <= floor_[t] - usage_[t];
    // Others hold capacity within its floor: free + its usage < its floor,
    // with a floor above the cluster's size counted as the whole cluster.
    if (fits_floor && free_milli + usage_[t] < std::min(floor_[t], total_)) violating_.push_back(static_cast<tenancy::TenantId>(t));
  }
  return violating_;
}

void SummarizeTenants(const tenancy::TenantTree& tree, const std::vector<Job>& jobs,
                      const std::vector<double>& violation_s, QueueSimResult& r) {
    const auto leaves = tree.Leaves();
    const double equal_share = static_cast<double>(r.total_gpus) / static_cast<double>(leaves.size());
    const auto gpu = tree.resource("gpu");
    std::map<std::string, size_t> slot;
    std::vector<std::vector<int64_t>> tenant_delays(leaves.size());
    std::vector<double> slow_sum(leaves.size(), 0), ftf_sum(leaves.size(), 0), jct_sum(leaves.size(), 0);
    for (size_t k = 0; k < leaves.size(); ++k) {
      TenantResult tr;
      tr.name = tree.name(leaves[k]);
      tr.floor_gpus = gpu ? tree.subtree(leaves[k], *gpu) / kMilliPerGpu : 0;
      tr.guarantee_violation_hours = violation_s[static_cast<size_t>(leaves[k])] / 3600.0;
      slot[tr.name] = k;
      r.per_tenant.push_back(std::move(tr));
    }
    for (size_t i = 0; i < r.jobs.size(); ++i) {
      const QueueJobRecord& rec = r.jobs[i];
      if (rec.outcome != JobOutcome::kFinished) continue;
      const size_t k = slot.at(tree.name(tree.Find(jobs[i].group)));
      TenantResult& tr = r.per_tenant[k];
      ++tr.jobs;
      tenant_delays[k].push_back(rec.start_s - rec.submit_s);
      const double jct = static_cast<double>(rec.finish_s - rec.submit_s);
      const double run = static_cast<double>(std::max<int64_t>(1, *jobs[i].duration_s));
      jct_sum[k] += jct;
      tr.wait_mean_s += static_cast<double>(rec.finish_s - rec.submit_s - rec.run_s);
      slow_sum[k] += std::max(1.0, jct / run);
      ftf_sum[k] += jct / (run * std::max(1.0, static_cast<double>(rec.num_gpu) / equal_share));
      tr.gpu_hours += static_cast<double>(jobs[i].TotalGpuMilli()) / kMilliPerGpu * run / 3600.0;
      tr.preemptions += rec.preemptions;
      tr.lost_gpu_hours += static_cast<double>(rec.lost_gpu_s) / 3600.0;
    }
    double lo = -1, hi = -1, ftf_max = -1;
    for (size_t k = 0; k < leaves.size(); ++k) {
      TenantResult& tr = r.per_tenant[k];
      if (tr.jobs == 0) continue;
      const double n = static_cast<double>(tr.jobs);
      tr.queue_delay_s = Summarize(std::move(tenant_delays[k]));
      tr.jct_mean_s = jct_sum[k] / n;
      tr.wait_mean_s /= n;
      tr.slowdown_mean = slow_sum[k] / n;
      tr.ftf_mean = ftf_sum[k] / n;
      lo = lo < 0 ? tr.slowdown_mean : std::min(lo, tr.slowdown_mean);
      hi = std::max(hi, tr.slowdown_mean);
      ftf_max = std::max(ftf_max, tr.ftf_mean);
    }
    if (lo > 0) r.fairness_max_min_slowdown = hi / lo;
    r.finish_time_fairness_max = ftf_max;
}

}  // namespace tidal::sim
