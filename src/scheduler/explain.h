// "Why is this job pending?": every blocking cause, ranked, with its
// shortfall — not one terse reason. Shared by both queues (the simulator's
// `sim queue --explain JOB --at T`, later the daemon's API).
//
// Causes, in rank order:
//  * gpu-model (unresolvable): a model it asks for does not exist here;
//  * quota: per resource where the request exceeds what its tenant may
//    take now — its floor, its use, what it could borrow and why not more;
//  * capacity / topology: the free room it needs in one host (or one
//    domain of the smallest switch level that can hold a gang) against the
//    best there is now;
//  * placement: its placer could place it but waits for a compact
//    placement;
//  * reservation: capacity is held for an earlier job that cannot start yet.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/scheduler.h"
#include "tenancy/tenant_tree.h"
#include "workload/job.h"

namespace tidal {

struct BlockingCause {
  std::string kind;      // gpu-model, quota, capacity, topology, placement, reservation
  std::string detail;    // the sentence a person reads
  int64_t shortfall = 0; // in `unit`, 0 if none
  bool resolvable = true;
  std::string unit = "gpu";  // of the shortfall: gpu (capacity, topology), or the quota resource's (milli-gpu, milli-cpu, MiB)
};

struct ExplainContext {
  const tenancy::TenantTree* usage = nullptr;  // live quota usage, null without tenants
  tenancy::TenantId tenant = tenancy::kNoTenant;
  const Job* reserved_for = nullptr;            // the job holding a backfill reservation
  int64_t reservation_s = -1;
};

std::vector<BlockingCause> ExplainPending(Scheduler& scheduler, const Job& job, const ExplainContext& ctx);

}  // namespace tidal
