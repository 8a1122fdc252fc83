#include "server/job_rows.h"

#include <fmt/format.h>

#include "server/auth.h"

namespace tidal::server {
namespace {

store::Value Opt(const std::optional<int64_t>& v) { return v ? store::Value(*v) : store::Value(); }

Result<std::optional<int64_t>> OptInt(const store::Row& row, size_t col) {
  if (store::IsNull(row, col)) return std::optional<int64_t>();
  TIDAL_ASSIGN_OR_RETURN(int64_t v, store::AsInt(row, col));
  return std::optional<int64_t>(v);
}

}  // namespace

Result<StoredJob> JobFromRow(const store::Row& row) {
  StoredJob s;
  JobView& v = s.view;
  TIDAL_ASSIGN_OR_RETURN(v.id, store::AsInt(row, 0));
  TIDAL_ASSIGN_OR_RETURN(v.tenant, store::AsText(row, 1));
  TIDAL_ASSIGN_OR_RETURN(v.name, store::AsText(row, 2));
  TIDAL_ASSIGN_OR_RETURN(v.source, store::AsText(row, 3));
  TIDAL_ASSIGN_OR_RETURN(std::string spec, store::AsText(row, 4));
  auto parsed = ParseSubmitBody(spec);
  if (!parsed) return MakeError(ErrorCode::kParse, "job {}: its stored spec does not parse: {}", v.id, parsed.error().message);
  s.request = *parsed;
  TIDAL_ASSIGN_OR_RETURN(v.submitted_at, store::AsInt(row, 5));
  TIDAL_ASSIGN_OR_RETURN(s.arrived_at, OptInt(row, 6));
  TIDAL_ASSIGN_OR_RETURN(int64_t cr, store::AsInt(row, 7));
  v.cancel_requested = cr != 0;
  TIDAL_ASSIGN_OR_RETURN(s.cancel_at, OptInt(row, 8));
  TIDAL_ASSIGN_OR_RETURN(v.state, store::AsText(row, 9));
  TIDAL_ASSIGN_OR_RETURN(v.started_at, OptInt(row, 10));
  TIDAL_ASSIGN_OR_RETURN(v.ended_at, OptInt(row, 11));
  TIDAL_ASSIGN_OR_RETURN(std::string placement, store::AsText(row, 12));
  v.placement = nlohmann::json::parse(placement, nullptr, /*allow_exceptions=*/false);
  if (v.placement.is_discarded()) return MakeError(ErrorCode::kParse, "job {}: its stored placement is not JSON", v.id);
  TIDAL_ASSIGN_OR_RETURN(int64_t pre, store::AsInt(row, 13));
  v.preemptions = static_cast<int32_t>(pre);
  TIDAL_ASSIGN_OR_RETURN(v.reason, store::AsText(row, 14));
  FillFromRequest(v, s.request);
  return s;
}

void FillFromRequest(JobView& v, const SubmitRequest& r) {
  v.gpus = r.gpu_milli > 0 ? 1 : r.gpus;
  v.gpu_milli = r.gpu_milli > 0 ? r.gpu_milli : kMilliPerGpu;
  v.gpu_model = r.gpu_model;
  v.priority = r.priority;
  v.estimated_runtime_s = r.estimated_runtime_s;
}

SubmitRequest TraceRequest(const Job& job) {
  SubmitRequest r;
  r.name = job.name;
  r.tenant = job.group;
  if (job.gpu_milli < kMilliPerGpu && job.num_gpu == 1) r.gpu_milli = job.gpu_milli;
  else r.gpus = job.num_gpu;
  r.gpu_model = job.gpu_spec;
  r.priority = job.priority;
  r.estimated_runtime_s = std::max<int64_t>(1, job.PlannedDuration());
  r.runtime_s = std::max<int64_t>(1, job.duration_s.value_or(1));
  r.single_node = job.single_node;
  return r;
}

JobView TraceView(const Job& job, int64_t t) {
  JobView v;
  v.id = job.id;
  v.name = job.name;
  v.tenant = job.group;
  v.source = "trace";
  v.state = "pending";
  v.gpus = job.num_gpu;
  v.gpu_milli = job.gpu_milli;
  v.gpu_model = job.gpu_spec;
  v.priority = job.priority;
  v.estimated_runtime_s = job.PlannedDuration();
  v.submitted_at = t;
  return v;
}

nlohmann::json PlacementJson(const ClusterState& c, const Placement& p) {
  nlohmann::json out = nlohmann::json::array();
  for (const NodeAssignment& a : p.assignments) {
    nlohmann::json one = {{"node", c.node_name(a.node)}, {"gpus", a.gpus}};
    bool shared = false;
    for (int32_t m : a.gpu_milli) shared = shared || m < kMilliPerGpu;
    if (shared) one["gpu_milli"] = a.gpu_milli;
    out.push_back(std::move(one));
  }
  return out;
}

Result<bool> InsertApiJob(store::Tx& tx, const JobView& v, const std::string& spec, const std::string& spec_hash,
                          const std::string& idempotency_key, const std::string& by) {
  const store::Value p[] = {v.id,
                            v.tenant,
                            v.name,
                            spec,
                            spec_hash,
                            idempotency_key.empty() ? store::Value() : store::Value(idempotency_key),
                            v.submitted_at,
                            by};
  TIDAL_ASSIGN_OR_RETURN(int64_t n, tx.Exec("INSERT INTO jobs (id, tenant, name, source, spec, spec_hash, idempotency_key, "
                                            "submitted_at, submitted_by, arrived_at, cancel_requested, cancel_at, state, "
                                            "started_at, ended_at, placement, preemptions, reason) VALUES (?, ?, ?, 'api', ?, "
                                            "?, ?, ?, ?, NULL, 0, NULL, 'accepted', NULL, NULL, '[]', 0, '') ON CONFLICT DO NOTHING",
                                            p));
  return n == 1;
}

Status UpsertJob(store::Tx& tx, const JobView& v, const std::string& spec, std::optional<int64_t> arrived_at,
                 std::optional<int64_t> cancel_at) {
  const store::Value p[] = {v.id,        v.tenant, v.name,          v.source,    spec, Sha256Hex(spec), v.submitted_at,
                            Opt(arrived_at), Opt(cancel_at), v.state, Opt(v.started_at), Opt(v.ended_at), v.placement.dump(),
                            int64_t{v.preemptions}, v.reason};
  TIDAL_RETURN_IF_ERROR(tx.Exec(
      "INSERT INTO jobs (id, tenant, name, source, spec, spec_hash, idempotency_key, submitted_at, submitted_by, arrived_at, "
      "cancel_requested, cancel_at, state, started_at, ended_at, placement, preemptions, reason) VALUES (?, ?, ?, ?, ?, ?, "
      "NULL, ?, 'trace', ?, 0, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET arrived_at = excluded.arrived_at, "
      "cancel_at = excluded.cancel_at, state = excluded.state, started_at = excluded.started_at, ended_at = "
      "excluded.ended_at, placement = excluded.placement, preemptions = excluded.preemptions, reason = excluded.reason",
      p));
  return Ok();
}

Status AppendAudit(store::Tx& tx, int64_t at, std::string_view token, std::string_view role, std::string_view method,
                   std::string_view path, int status, std::string_view object) {
  const store::Value p[] = {at, std::string(token), std::string(role), std::string(method), std::string(path), int64_t{status},
                            std::string(object)};
  TIDAL_RETURN_IF_ERROR(tx.Exec("INSERT INTO audit_log (seq, at, token, role, method, path, status, object) SELECT "
                                "COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ?, ?, ?, ? FROM audit_log",
                                p));
  return Ok();
}

}  // namespace tidal::server
