// Tenant metrics of a queue replay, the same for every queue policy (the
// FIFO queue too, with tenants given): guarantee violations as DESIGN.md
// defines them, and per-tenant delay, slowdown and fairness.
#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "tenancy/tenant_tree.h"
#include "workload/job.h"

namespace tidal::sim {

struct QueueSimResult;

// Tracks each leaf tenant's GPUs in use and waiting requests from the
// replay's events. A tenant is in violation after a pass when it has a
// waiting job that fits in its own unused floor while others hold capacity
// within that floor: free GPUs + its usage < its floor.
class GuaranteeTracker {
 public:
  explicit GuaranteeTracker(const tenancy::TenantTree& tree);
  void Waiting(const Job& j, int sign);  // +1 queued (arrival, preemption), -1 left the queue
  void Running(const Job& j, int sign);  // +1 started, -1 finished or preempted
  void SetTotal(int64_t total_milli);  // the cluster's milli-GPU (floors above it are capped)
  // Tenants in violation with `free_milli` idle milli-GPU in the cluster.
  const std::vector<tenancy::TenantId>& Violating(int64_t free_milli);

 private:
  tenancy::TenantId Of(const Job& j) const;
  const tenancy::TenantTree& tree_;
  std::vector<int64_t> usage_, floor_;
  std::vector<std::multiset<int64_t>> waiting_;
  std::vector<tenancy::TenantId> violating_;
  int64_t total_ = std::numeric_limits<int64_t>::max();
};

// Fills r.per_tenant, r.fairness_max_min_slowdown and
// r.finish_time_fairness_max from r.jobs (jobs[i] is r.jobs[i]'s job);
// `violation_s` per tenant id.
void SummarizeTenants(const tenancy::TenantTree& tree, const std::vector<Job>& jobs,
                      const std::vector<double>& violation_s, QueueSimResult& r);

}  // namespace tidal::sim
