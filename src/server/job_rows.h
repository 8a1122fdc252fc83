// Jobs in the store (table `jobs`, store migration 2): the row <-> JobView
// mapping, shared by the daemon's writes, its restart and its reads.
#pragma once

#include <optional>
#include <string_view>

#include "cluster/cluster_state.h"
#include "common/result.h"
#include "server/job_request.h"
#include "server/snapshot.h"
#include "store/store.h"

namespace tidal::server {

// The columns JobFromRow reads, in order; append WHERE/ORDER clauses.
inline constexpr std::string_view kJobSelect =
    "SELECT id, tenant, name, source, spec, submitted_at, arrived_at, cancel_requested, cancel_at, state, started_at, "
    "ended_at, placement, preemptions, reason FROM jobs";

struct StoredJob {
  JobView view;
  SubmitRequest request;
  std::optional<int64_t> arrived_at, cancel_at;
};

Result<StoredJob> JobFromRow(const store::Row& row);

// What a view takes from its request: sizes, models, priority, estimate.
void FillFromRequest(JobView& v, const SubmitRequest& r);
// The view of a trace job that arrived at t.
JobView TraceView(const Job& job, int64_t t);
// The request a trace job would have been (the row's spec).
SubmitRequest TraceRequest(const Job& job);
// [{"node": name, "gpus": [...]}] of a placement.
nlohmann::json PlacementJson(const ClusterState& c, const Placement& p);

// Inserts a new API job; false when (tenant, idempotency key) exists already.
Result<bool> InsertApiJob(store::Tx& tx, const JobView& v, const std::string& spec, const std::string& spec_hash,
                          const std::string& idempotency_key, const std::string& by);
// Writes the scheduler's view of a job (inserting a trace job's row).
Status UpsertJob(store::Tx& tx, const JobView& v, const std::string& spec, std::optional<int64_t> arrived_at,
                 std::optional<int64_t> cancel_at);
// Appends one audit entry.
Status AppendAudit(store::Tx& tx, int64_t at, std::string_view token, std::string_view role, std::string_view method,
                   std::string_view path, int status, std::string_view object);

}  // namespace tidal::server
