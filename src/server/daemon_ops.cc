// The daemon's operator inputs besides jobs (daemon.h, OpInput): draining a
// node and returning it to service, changing a tenant's quota. Each is
// checked against the state now, written to the store with its audit entry,
// and only then applied, in a batch of its own at a time no batch has used —
// so a restart replays it in the same place (docs/server.md, "Operator
// inputs").
#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "scheduler/tenant_queue.h"
#include "server/daemon.h"
#include "server/job_rows.h"
#include "market/market_config.h"

namespace tidal::server {

namespace {

const TenantQueue* TenantQueueOf(const sim::Replay& replay) {
  const TenantQueue* tq = dynamic_cast<const TenantQueue*>(&replay.queue());
  return tq != nullptr && tq->tree() != nullptr ? tq : nullptr;
}

// The capacity a quota on `resource` can be backed by, in its unit; -1 when
// the cluster does not bound it (an unknown GPU model is left to the tree).
int64_t Capacity(const ClusterState& c, const std::string& resource) {
  int64_t total = 0;
  if (resource == "gpu") return c.total_gpu_milli();
  if (resource == "cpu") return c.total_cpu_milli();
  if (resource.starts_with("gpu/")) {
    const std::string model = resource.substr(4);
    bool found = false;
    for (NodeId n = 0; n < c.num_nodes(); ++n) {
      if (c.gpu_count(n) == 0 || c.models().Name(c.gpu_model(n)) != model) continue;
      found = true;
      total += int64_t{c.gpu_count(n)} * kMilliPerGpu;
    }
    return found ? total : 0;
  }
  if (resource == "memory") {
    for (NodeId n = 0; n < c.num_nodes(); ++n) total += c.memory_capacity(n);
    return total;
  }
  return -1;
}

}  // namespace

Result<Daemon::PreparedOp> Daemon::PrepareOp(const OpInput& op, const sim::Replay& replay) const {
  const ClusterState& c = replay.cluster();
  PreparedOp out;
  if (op.kind == "drain" || op.kind == "resume") {
    const std::string name = op.body.value("node", "");
    const std::optional<NodeId> n = c.FindNode(name);
    if (!n) return MakeError(ErrorCode::kNotFound, "no node '{}' in the cluster", name);
    if (op.kind == "drain" && c.cordoned(*n)) {
      return MakeError(ErrorCode::kFailedPrecondition, "node '{}' is already drained; resume it first to drain it again", name);
    }
    if (op.kind == "resume" && !c.cordoned(*n)) {
      return MakeError(ErrorCode::kFailedPrecondition, "node '{}' is not drained; there is nothing to resume", name);
    }
    out.node = *n;
    return out;
  }
  if (op.kind == "quota") {
    TIDAL_ASSIGN_OR_RETURN(QuotaChange q, QuotaChange::FromJson(op.body));
    const TenantQueue* tq = TenantQueueOf(replay);
    if (tq == nullptr) {
      return MakeError(ErrorCode::kFailedPrecondition, "this daemon runs the '{}' queue without tenants; quotas need a tenant queue",
                       QueuePolicyName(config_.queue));
    }
    const tenancy::TenantTree& tree = *tq->tree();
    TIDAL_ASSIGN_OR_RETURN(tenancy::TenantTree next, tree.WithQuota(q.tenant, q.resource, {.nominal = q.nominal,
                                                                                           .borrowing_limit = q.borrowing_limit,
                                                                                           .lending_limit = q.lending_limit}));
    // The floors under the root are promises: refuse a change that promises
    // more than the cluster has (it may stay where a tenants file put it).
    const tenancy::ResourceId r = *next.resource(q.resource);
    const int64_t cap = Capacity(c, q.resource);
    const int64_t before = tree.subtree(tree.root(), r), after = next.subtree(next.root(), r);
    if (cap >= 0 && after > cap && after > before) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "the floors on '{}' would add up to {} under the root '{}', and the cluster has {}; lower another "
                       "tenant's floor first",
                       q.resource, after, next.name(next.root()), cap);
    }
    out.tree = std::make_shared<const tenancy::TenantTree>(std::move(next));
    return out;
  }
  if (op.kind == "end") {
    // Slurm reports a job's end: it must be running here.
    const JobId job = op.body.value("job", JobId{0});
    if (!replay.running(job)) return MakeError(ErrorCode::kFailedPrecondition, "job {} is not running; its end cannot be taken", job);
    return out;
  }
  return MakeError(ErrorCode::kInvalidArgument, "unknown operator input kind '{}'", op.kind);
}

Status Daemon::ApplyOp(const OpInput& op, sim::Replay& replay) {
  TIDAL_ASSIGN_OR_RETURN(PreparedOp p, PrepareOp(op, replay));
  if (op.kind == "drain") return replay.Cordon(p.node);
  if (op.kind == "resume") return replay.Uncordon(p.node);
  if (op.kind == "end") return replay.Cancel(op.body.value("job", JobId{0}), replay.now());
  return replay.SetTenants(p.tree);
}

nlohmann::json Daemon::NodeJson(NodeId n) const {
  const ClusterState& c = replay_->cluster();
  auto it = drained_.find(n);
  return {{"name", c.node_name(n)},
          {"drained", c.cordoned(n)},
          {"drain_reason", it == drained_.end() ? nlohmann::json() : nlohmann::json(it->second)}};
}

ApiResult<int64_t> Daemon::RecordOp(std::string kind, nlohmann::json body, const Principal& by, const Audit& audit, int status,
                                    std::string object) {
  return RecordOps({{.kind = std::move(kind), .body = std::move(body)}}, by, &audit, status, std::move(object));
}

ApiResult<int64_t> Daemon::RecordOps(std::vector<OpInput> ops, const Principal& by, const Audit* audit, int status, std::string object) {
  // The batch these inputs take effect in: after every batch that ran, with
  // the events before it run first so that they are checked on that state.
  const int64_t t = std::max(Now(), last_batch_ + 1);
  if (Status s = AdvanceTo(t, /*inclusive=*/false); !s) return std::unexpected(FromError(s.error()));
  for (OpInput& op : ops) {
    op.id = next_op_id_ + static_cast<int64_t>(&op - ops.data());
    if (auto p = PrepareOp(op, *replay_); !p) {
      const Error& e = p.error();
      if (e.code == ErrorCode::kFailedPrecondition) return std::unexpected(Conflict(e.message));
      return std::unexpected(FromError(e));
    }
  }
  const int64_t wall = static_cast<int64_t>(wall_());
  Status written = store_.Write([&](store::Tx& tx) -> Status {
    for (const OpInput& op : ops) {
      const store::Value p[] = {op.id, t, op.kind, op.body.dump(), wall, by.token_id};
      TIDAL_RETURN_IF_ERROR(tx.Exec("INSERT INTO daemon_inputs (id, at, kind, body, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?)", p));
    }
    if (audit == nullptr) return Ok();
    return AppendAudit(tx, wall, by.token_id, RoleName(by.role), audit->method, audit->path, status, object);
  });
  if (!written) return std::unexpected(FromError(written.error()));
  next_op_id_ += static_cast<int64_t>(ops.size());
  // Recorded: from here the inputs are part of the daemon's history, and a
  // failure to run them is the scheduler's (a restart replays them).
  if (Status s = RunBatch(t, {}, {}, std::move(ops)); !s) return std::unexpected(FromError(s.error()));
  if (Status s = Flush(); !s) return std::unexpected(FromError(s.error()));
  if (binder_) RunBindActions();
  Publish();
  return t;
}

ApiResult<nlohmann::json> Daemon::Drain(const std::string& node, const std::string& reason, const Principal& by, const Audit& audit) {
  if (!CanOperate(by)) return std::unexpected(Forbidden(fmt::format("a {} token may not drain nodes", RoleName(by.role))));
  return OnScheduler([&]() -> ApiResult<nlohmann::json> {
    auto t = RecordOp("drain", {{"node", node}, {"reason", reason}}, by, audit, 200, "node/" + node);
    if (!t) return std::unexpected(t.error());
    nlohmann::json out = NodeJson(*replay_->cluster().FindNode(node));
    out["at"] = *t;
    return out;
  });
}

ApiResult<nlohmann::json> Daemon::Resume(const std::string& node, const Principal& by, const Audit& audit) {
  if (!CanOperate(by)) return std::unexpected(Forbidden(fmt::format("a {} token may not resume nodes", RoleName(by.role))));
  return OnScheduler([&]() -> ApiResult<nlohmann::json> {
    auto t = RecordOp("resume", {{"node", node}}, by, audit, 200, "node/" + node);
    if (!t) return std::unexpected(t.error());
    nlohmann::json out = NodeJson(*replay_->cluster().FindNode(node));
    out["at"] = *t;
    return out;
  });
}

ApiResult<nlohmann::json> Daemon::SetQuota(const QuotaChange& q, const Principal& by, const Audit& audit) {
  if (!CanSetQuota(by)) return std::unexpected(Forbidden(fmt::format("a {} token may not change quotas", RoleName(by.role))));
  return OnScheduler([&]() -> ApiResult<nlohmann::json> {
    auto t = RecordOp("quota", q.ToJson(), by, audit, 200, "tenant/" + q.tenant);
    if (!t) return std::unexpected(t.error());
    nlohmann::json out = q.ToJson();
    out["at"] = *t;
    return out;
  });
}

ApiResult<nlohmann::json> Daemon::Quote(const std::string& model, const std::string& tier_name, int64_t gpus, int64_t duration_s) {
  auto tier = market::ParseTier(tier_name);
  if (!tier) return std::unexpected(BadRequest(tier.error().message, "tier"));
  return OnScheduler([&]() -> ApiResult<nlohmann::json> {
    if (!prices_) return std::unexpected(NotFound("this daemon runs without a market (no 'market:' in its config)"));
    if (prices_->pool(model) == nullptr) return std::unexpected(NotFound(fmt::format("no price pool for GPU model '{}'", model)));
    const int64_t start = std::max({Now(), last_batch_, price_clock_});
    auto q = prices_->QuoteJob(model, *tier, start, duration_s, gpus * kMilliPerGpu, 0);
    if (!q) return std::unexpected(FromError(q.error()));
    return nlohmann::json{{"gpu_model", q->model},
                          {"tier", market::TierName(q->tier)},
                          {"gpus", gpus},
                          {"start", q->start_s},
                          {"duration_s", q->duration_s},
                          {"total", market::FormatCredits(q->total)},
                          {"upper_bound_total", market::FormatCredits(q->upper_bound_total)},
                          {"announced_until", q->horizon_s},
                          {"beyond_announced_s", q->beyond_horizon_s}};
  });
}

}  // namespace tidal::server
