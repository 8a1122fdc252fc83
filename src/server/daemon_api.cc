// The daemon's API calls, its store writes and the snapshot (daemon.h).
#include <algorithm>
#include <chrono>
#include <future>
#include <limits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "scheduler/tenant_queue.h"
#include "server/daemon.h"
#include "server/job_rows.h"
#include "market/market_config.h"
#include "sim/start_estimate.h"

namespace tidal::server {

nlohmann::json JobView::ToJson() const {
  auto opt = [](const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  return {{"id", id},
          {"name", name},
          {"tenant", tenant},
          {"source", source},
          {"state", state},
          {"gpus", gpus},
          {"gpu_milli", gpu_milli},
          {"gpu_model", gpu_model},
          {"tier", tier},
          {"priority", priority},
          {"estimated_runtime_s", estimated_runtime_s},
          {"submitted_at", submitted_at},
          {"started_at", opt(started_at)},
          {"ended_at", opt(ended_at)},
          {"placement", placement},
          {"preemptions", preemptions},
          {"cancel_requested", cancel_requested},
          {"reason", reason}};
}

nlohmann::json TenantView::ToJson() const {
  return {{"name", name},
          {"parent", parent},
          {"tier", tier},
          {"floor_gpus", floor_gpus},
          {"in_use_gpus", in_use_gpus},
          {"borrowed_gpus", borrowed_gpus},
          {"lent_gpus", lent_gpus},
          {"pending_jobs", pending_jobs},
          {"running_jobs", running_jobs},
          {"balance", balance ? nlohmann::json(*balance) : nlohmann::json()}};
}

std::string Daemon::TierOf(const std::string& tenant) const {
  if (!config_.tenants) return "standard";
  const tenancy::TenantId t = config_.tenants->Find(tenant);
  if (t == tenancy::kNoTenant) return "standard";
  return tenancy::TierName(config_.tenants->spec(t).tier);
}

// --- Writes and the snapshot ----------------------------------------------

Status Daemon::Flush() {
  if (dirty_.empty()) return Ok();
  TIDAL_RETURN_IF_ERROR(store_.Write([&](store::Tx& tx) -> Status {
    for (JobId id : dirty_) {
      const Rec& r = recs_.at(id);
      TIDAL_RETURN_IF_ERROR(UpsertJob(tx, r.view, r.spec, r.arrived_at, r.cancel_at));
    }
    return Ok();
  }));
  for (JobId id : dirty_) {
    Rec& r = recs_.at(id);
    r.json = r.view.ToJson().dump();
  }
  dirty_.clear();
  return Ok();
}

void Daemon::RefreshReasons() {
  const double wall = wall_();
  if (wall - reasons_at_ < 5.0) return;
  reasons_at_ = wall;
  reasons_.clear();
  WorkQueue& q = replay_->queue();
  int budget = 200;  // Explain runs a probe cycle per job: cap the work per refresh
  for (const auto& [id, job] : replay_->live()) {
    if (replay_->running(id)) continue;
    if (budget-- <= 0) {
      reasons_[id] = "not-examined";
      continue;
    }
    std::vector<BlockingCause> causes = q.Explain(*job);
    reasons_[id] = causes.empty() ? "none" : causes.front().kind;
  }
}

void Daemon::Publish() {
  RefreshReasons();
  auto s = std::make_shared<Snapshot>();
  const ClusterState& c = replay_->cluster();
  s->now = replay_->now() > Now() ? replay_->now() : Now();
  s->speed = config_.speed;
  s->batches = batches_;
  s->nodes = c.num_nodes();
  s->gpus = c.total_gpus();
  s->gpus_allocated = c.gpus_in_use();
  s->allocation_ratio = c.total_gpus() ? s->gpus_allocated / static_cast<double>(c.total_gpus()) : 0;
  WorkQueue& q = replay_->queue();
  // Stranded capacity is defined while a job waits (DESIGN.md); with none, none.
  const int64_t stranded = q.waiting() == 0 ? 0 : stranded_.Compute(c, q.waiting_shapes(), q.shapes_version());
  s->fragmentation_ratio = c.total_gpu_milli() ? static_cast<double>(stranded) / static_cast<double>(c.total_gpu_milli()) : 0;
  // Jobs: live, then the recent ends.
  std::map<std::string, std::pair<int64_t, int64_t>> per_tenant;  // pending, running
  for (const auto& [id, job] : replay_->live()) {
    const Rec& r = recs_.at(id);
    s->index[id] = s->jobs.size();
    s->jobs.push_back(r.view);
    s->json.push_back(r.json);
    if (r.view.state == "running") {
      ++s->running;
      ++per_tenant[r.view.tenant].second;
    } else {
      ++s->pending;
      ++per_tenant[r.view.tenant].first;
      auto it = reasons_.find(id);
      ++s->pending_by_reason[{r.view.tenant, it == reasons_.end() ? "not-examined" : it->second}];
    }
  }
  for (auto it = ended_.rbegin(); it != ended_.rend(); ++it) {
    auto r = recs_.find(*it);
    if (r == recs_.end() || s->index.contains(*it)) continue;
    s->index[*it] = s->jobs.size();
    s->jobs.push_back(r->second.view);
    s->json.push_back(r->second.json);
  }
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, v] : accepted_) {
      if (s->index.contains(id)) continue;
      s->index[id] = s->jobs.size();
      s->jobs.push_back(v);
      s->json.push_back(v.ToJson().dump());
      ++s->pending;
      ++per_tenant[v.tenant].first;
      ++s->pending_by_reason[{v.tenant, "accepted"}];
    }
  }
  // Newest first, as lists answer (a list is then a scan that stops at its
  // page), and the index rebuilt for that order.
  {
    std::vector<size_t> order(s->jobs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::pair(s->jobs[a].submitted_at, s->jobs[a].id) > std::pair(s->jobs[b].submitted_at, s->jobs[b].id);
    });
    std::vector<JobView> jobs;
    std::vector<std::string> json;
    jobs.reserve(order.size());
    json.reserve(order.size());
    for (size_t i : order) {
      jobs.push_back(std::move(s->jobs[i]));
      json.push_back(std::move(s->json[i]));
    }
    s->jobs = std::move(jobs);
    s->json = std::move(json);
    for (size_t i = 0; i < s->jobs.size(); ++i) s->index[s->jobs[i].id] = i;
  }
  // Tenants.
  if (auto* tq = dynamic_cast<TenantQueue*>(&q); tq && tq->tree()) {
    const tenancy::TenantTree& tree = *tq->tree();
    std::vector<TenantStatus> st = tq->TenantStatuses();
    double borrowed = 0, idle_floor = 0;
    for (const TenantStatus& t : st) {
      borrowed += std::max<double>(0, static_cast<double>(t.usage_gpu_milli - t.floor_gpu_milli)) / kMilliPerGpu;
      idle_floor += std::max<double>(0, static_cast<double>(t.floor_gpu_milli - t.usage_gpu_milli)) / kMilliPerGpu;
    }
    const double lent_share = idle_floor > 0 ? std::min(1.0, borrowed / idle_floor) : 0;
    // Balances from the ledger: one read of every account, at most every 2 s
    // (API reads never touch the store for them).
    if (const double wall = wall_(); ledger_ && wall - balances_at_ >= 2.0) {
      balances_at_ = wall;
      if (auto accounts = ledger_->Accounts(); accounts) {
        balances_.clear();
        for (const market::Account& a : *accounts) balances_[a.name] = market::FormatCredits(a.balance());
      } else {
        spdlog::warn("serve: reading the ledger's balances failed: {}", accounts.error().message);
      }
    }
    for (const TenantStatus& t : st) {
      TenantView v;
      v.name = tree.name(t.tenant);
      const tenancy::TenantId p = tree.parent(t.tenant);
      v.parent = p == tenancy::kNoTenant ? "" : tree.name(p);
      v.tier = tenancy::TierName(tree.spec(t.tenant).tier);
      v.floor_gpus = static_cast<double>(t.floor_gpu_milli) / kMilliPerGpu;
      v.in_use_gpus = static_cast<double>(t.usage_gpu_milli) / kMilliPerGpu;
      v.borrowed_gpus = std::max(0.0, v.in_use_gpus - v.floor_gpus);
      v.lent_gpus = std::max(0.0, v.floor_gpus - v.in_use_gpus) * lent_share;
      v.pending_jobs = per_tenant[v.name].first;
      v.running_jobs = per_tenant[v.name].second;
      if (auto b = balances_.find(v.name); b != balances_.end()) v.balance = b->second;
      s->tenants.push_back(std::move(v));
    }
  }
  // Nodes and the switch tree.
  std::vector<double> host_alloc(static_cast<size_t>(c.num_nodes()), 0);
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    NodeView v;
    v.name = c.node_name(n);
    v.gpu_model = c.gpu_count(n) > 0 ? c.models().Name(c.gpu_model(n)) : "";
    v.gpus = c.gpu_count(n);
    v.gpus_free = c.free_whole_gpus(n);
    // A drained node's idle capacity is held by its cordon, not allocated.
    v.gpus_allocated =
        static_cast<double>(int64_t{c.gpu_count(n)} * kMilliPerGpu - c.gpu_milli_free(n) - c.cordon_gpu_milli(n)) / kMilliPerGpu;
    if (auto d = drained_.find(n); d != drained_.end()) {
      v.drained = true;
      v.drain_reason = d->second;
    }
    host_alloc[static_cast<size_t>(n)] = v.gpus_allocated;
    if (c.has_topology()) {
      const topo::Topology& t = c.topology();
      for (topo::DomainId d = t.parent(t.host(c.host_of(n))); d >= 0; d = t.parent(d)) v.domains.push_back(t.DomainName(d));
    }
    s->node_views.push_back(std::move(v));
  }
  if (c.has_topology()) {
    const topo::Topology& t = c.topology();
    for (topo::Level l : t.levels())
      if (l >= topo::Level::kNode) s->levels.push_back(std::string(topo::LevelName(l)));
    std::vector<double> alloc(static_cast<size_t>(t.num_domains()), 0);
    std::vector<int64_t> frag(static_cast<size_t>(t.num_domains()), 0);
    for (NodeId n = 0; n < c.num_nodes(); ++n) {
      const topo::DomainId h = t.host(c.host_of(n));
      alloc[static_cast<size_t>(h)] = host_alloc[static_cast<size_t>(n)];
      const int32_t free = c.free_whole_gpus(n);
      if (free > 0 && free < c.gpu_count(n)) frag[static_cast<size_t>(h)] = free;
    }
    for (topo::DomainId d = t.num_domains() - 1; d > 0; --d) {
      const topo::DomainId p = t.parent(d);
      if (t.level(d) < topo::Level::kNode || p < 0) continue;
      alloc[static_cast<size_t>(p)] += alloc[static_cast<size_t>(d)];
      frag[static_cast<size_t>(p)] += frag[static_cast<size_t>(d)];
    }
    for (topo::DomainId d = 0; d < t.num_domains(); ++d) {
      if (t.level(d) < topo::Level::kNode) continue;
      s->domains.push_back({.id = d,
                            .parent = t.parent(d),
                            .name = t.DomainName(d),
                            .level = std::string(topo::LevelName(t.level(d))),
                            .gpus = t.gpus_under(d),
                            .gpus_allocated = alloc[static_cast<size_t>(d)],
                            .gpus_fragmented = frag[static_cast<size_t>(d)]});
    }
  }
  // Prices in force at the last batch (the pricer has seen every batch up to it).
  if (prices_) {
    const int64_t at = std::max({last_batch_, epoch_wall_, price_clock_});
    if (prices_->AdvanceTo(at)) {
      for (size_t m = 0; m < c.models().size(); ++m) {
        const std::string& model = c.models().Name(static_cast<GpuModelId>(m));
        const market::DynamicPricer* pool = prices_->pool(model);
        if (!pool) continue;
        s->price_history.push_back(pool->history());
        for (market::Tier tier : market::kAllTiers) {
          auto p = prices_->PriceAt(model, tier, at);
          if (!p) continue;
          s->prices.push_back({.gpu_model = model, .tier = market::TierName(tier),
                               .per_gpu_hour = static_cast<double>(*p) / static_cast<double>(market::kMicrosPerCredit),
                               .per_gpu_hour_text = market::FormatCredits(*p)});
        }
      }
    }
  }
  snapshot_.store(std::move(s));
}

// --- Calls ----------------------------------------------------------------

ApiResult<void> Daemon::CheckSubmit(SubmitRequest& r, const Principal& by) const {
  if (r.tenant.empty()) r.tenant = by.tenant;
  if (r.tenant.empty()) return std::unexpected(BadRequest("field 'tenant' is required for a token not bound to a tenant", "tenant"));
  if (!CanActFor(by, r.tenant)) {
    if (!CanRead(by, r.tenant)) return std::unexpected(NotFound(fmt::format("no tenant '{}'", r.tenant)));
    return std::unexpected(Forbidden(fmt::format("a {} token may not submit jobs for tenant '{}'", RoleName(by.role), r.tenant)));
  }
  if (config_.tenants) {
    const tenancy::TenantId t = config_.tenants->Find(r.tenant);
    if (t == tenancy::kNoTenant || !config_.tenants->is_leaf(t)) {
      return std::unexpected(BadRequest(fmt::format("tenant '{}' is {} in this cluster's tenant tree; jobs belong to leaf tenants",
                                                    r.tenant, t == tenancy::kNoTenant ? "not" : "not a leaf"),
                                        "tenant"));
    }
  }
  const ClusterState& c = replay_->cluster();
  for (const std::string& m : r.gpu_model) {
    if (c.models().Find(m) == kNoGpuModel) {
      std::string known;
      for (size_t i = 0; i < c.models().size(); ++i) known += (known.empty() ? "" : ", ") + c.models().Name(static_cast<GpuModelId>(i));
      return std::unexpected(BadRequest(fmt::format("GPU model '{}' is not in this cluster (it has: {})", m, known), "gpu_model"));
    }
  }
  if (r.gpus > c.total_gpus()) {
    return std::unexpected(BadRequest(fmt::format("{} GPUs asked; the cluster has {}", r.gpus, c.total_gpus()), "gpus"));
  }
  return {};
}

ApiResult<Daemon::Submitted> Daemon::Submit(SubmitRequest r, const Principal& by, const Audit& audit) {
  if (auto ok = CheckSubmit(r, by); !ok) return std::unexpected(ok.error());
  const JobId id = next_api_id_++;
  const int64_t now = Now();
  const std::string spec = r.ToJson().dump();
  const std::string hash = Sha256Hex(spec);
  JobView v;
  v.id = id;
  v.name = r.name.empty() ? fmt::format("job-{}", id) : r.name;
  v.tenant = r.tenant;
  FillFromRequest(v, r);
  v.tier = TierOf(r.tenant);
  v.submitted_at = now;
  bool created = false;
  std::optional<std::pair<JobId, std::string>> existing;  // (id, spec hash) under the same key
  Status s = commit_.Run([&](store::Tx& tx) -> Status {
    existing.reset();
    TIDAL_ASSIGN_OR_RETURN(created, InsertApiJob(tx, v, spec, hash, r.idempotency_key, by.token_id));
    if (!created) {
      const store::Value p[] = {r.tenant, r.idempotency_key};
      TIDAL_ASSIGN_OR_RETURN(store::Rows rows, tx.Query("SELECT id, spec_hash FROM jobs WHERE tenant = ? AND idempotency_key = ?", p));
      if (rows.rows.empty()) return MakeError(ErrorCode::kInternal, "job {} was not stored and no job holds its idempotency key", id);
      TIDAL_ASSIGN_OR_RETURN(JobId eid, store::AsInt(rows.rows[0], 0));
      TIDAL_ASSIGN_OR_RETURN(std::string eh, store::AsText(rows.rows[0], 1));
      existing = {eid, eh};
      return Ok();
    }
    return AppendAudit(tx, now, by.token_id, RoleName(by.role), audit.method, audit.path, 201, fmt::format("job/{}", id));
  });
  if (!s) return std::unexpected(FromError(s.error()));
  if (existing) {
    // A retry of an earlier submission with the same idempotency key: the
    // same canonical request (the hash covers every field) is that job.
    if (existing->second != hash) {
      return std::unexpected(Conflict(fmt::format("idempotency key '{}' was used by job {} with a different request",
                                                  r.idempotency_key, existing->first),
                                      "idempotency_key"));
    }
    auto got = GetJob(existing->first, by);
    if (!got) return std::unexpected(got.error());
    return Submitted{*got, false};
  }
  metrics_.submitted += 1;
  Rec rec{.job = std::make_unique<Job>(ToJob(r, id, now, largest_host_gpus_)), .view = v, .spec = spec};
  if (binder_) rec.job->duration_s = kOpenRunS;  // it ends when Slurm says so
  if (cost_ && rec.job->num_gpu > 1 && rec.job->gpu_milli == kMilliPerGpu) rec.job->tp_group = cost_->TensorParallel(rec.job->num_gpu);
  {
    std::lock_guard lock(mu_);
    accepted_[id] = v;
    inbox_jobs_.push_back(std::move(rec));
  }
  cv_.notify_all();
  return Submitted{v, true};
}

Result<std::optional<JobView>> Daemon::LoadJob(JobId id) {
  std::optional<JobView> out;
  TIDAL_RETURN_IF_ERROR(store_.Read([&](store::Tx& tx) -> Status {
    const store::Value p[] = {id};
    TIDAL_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(std::string(kJobSelect) + " WHERE id = ?", p));
    if (rows.rows.empty()) return Ok();
    TIDAL_ASSIGN_OR_RETURN(StoredJob sj, JobFromRow(rows.rows[0]));
    sj.view.tier = TierOf(sj.view.tenant);
    out = sj.view;
    return Ok();
  }));
  return out;
}

ApiResult<JobView> Daemon::GetJob(JobId id, const Principal& by) {
  std::optional<JobView> v;
  {
    std::shared_ptr<const Snapshot> s = snapshot();
    if (const JobView* j = s ? s->Find(id) : nullptr) v = *j;
  }
  if (!v) {
    std::lock_guard lock(mu_);
    if (auto it = accepted_.find(id); it != accepted_.end()) v = it->second;
  }
  if (!v) {
    auto loaded = LoadJob(id);
    if (!loaded) return std::unexpected(FromError(loaded.error()));
    v = *loaded;
  }
  if (!v || !CanRead(by, v->tenant)) return std::unexpected(NotFound(fmt::format("no job {}", id)));
  return *v;
}

ApiResult<JobView> Daemon::Cancel(JobId id, const Principal& by, const Audit& audit) {
  auto v = GetJob(id, by);
  if (!v) return v;
  if (!CanActFor(by, v->tenant) && !CanCancelAny(by)) {
    return std::unexpected(Forbidden(fmt::format("a {} token may not cancel jobs of tenant '{}'", RoleName(by.role), v->tenant)));
  }
  if (!v->live()) return std::unexpected(Conflict(fmt::format("job {} has already ended ({})", id, v->state)));
  if (v->source != "api") {
    return std::unexpected(Conflict(fmt::format("job {} comes from the embedded cluster's trace; only API jobs are cancelled", id)));
  }
  const int64_t now = Now();
  Status s = commit_.Run([&](store::Tx& tx) -> Status {
    const store::Value p[] = {id};
    TIDAL_RETURN_IF_ERROR(tx.Exec("UPDATE jobs SET cancel_requested = 1 WHERE id = ?", p));
    return AppendAudit(tx, now, by.token_id, RoleName(by.role), audit.method, audit.path, 202, fmt::format("job/{}", id));
  });
  if (!s) return std::unexpected(FromError(s.error()));
  metrics_.cancelled += 1;
  {
    std::lock_guard lock(mu_);
    inbox_cancels_.push_back(id);
    if (auto it = accepted_.find(id); it != accepted_.end()) it->second.cancel_requested = true;
  }
  cv_.notify_all();
  v->cancel_requested = true;
  return *v;
}

ApiResult<JobPage> Daemon::ListJobs(const JobFilter& f, const Principal& by) {
  static const std::set<std::string> states = {"", "accepted", "pending", "running", "succeeded", "cancelled", "failed"};
  if (!states.contains(f.state)) {
    return std::unexpected(
        BadRequest(fmt::format("state '{}' is unknown; give accepted, pending, running, succeeded, cancelled or failed", f.state), "state"));
  }
  std::string tenant = f.tenant;
  if (!tenant.empty() && !CanRead(by, tenant)) return std::unexpected(NotFound(fmt::format("no tenant '{}'", tenant)));
  const bool scoped = !(by.role == Role::kAdmin || by.role == Role::kOperator || (by.role == Role::kViewer && by.tenant.empty()));
  if (scoped) tenant = by.tenant;
  JobPage page;
  // state=pending includes the jobs accepted but not yet seen by a cycle.
  auto state_ok = [&](const std::string& s) { return f.state.empty() || s == f.state || (f.state == "pending" && s == "accepted"); };
  auto key = [](const JobView& v) { return JobCursor{v.submitted_at, v.id}; };
  auto keep = [&](const JobView& v) {
    return (tenant.empty() || v.tenant == tenant) && state_ok(v.state) && (!f.before || key(v) < *f.before);
  };
  if (f.state == "pending" || f.state == "running" || f.state == "accepted") {
    // Live jobs: from the snapshot (and the jobs not yet seen by a cycle).
    // The snapshot's jobs are newest first already.
    std::shared_ptr<const Snapshot> s = snapshot();
    if (!s) return page;
    for (size_t i = 0; i < s->jobs.size(); ++i) {
      const JobView& v = s->jobs[i];
      if (!keep(v)) continue;
      if (static_cast<int64_t>(page.jobs.size()) == f.limit) {
        page.next = key(page.jobs.back());
        break;
      }
      page.jobs.push_back(v);
      page.json.push_back(s->json[i]);
    }
    return page;
  }
  Status st = store_.Read([&](store::Tx& tx) -> Status {
    std::string sql = std::string(kJobSelect) + " WHERE 1 = 1";
    // Unused filters compare with themselves, so the parameters stay fixed;
    // no cursor is one past the newest.
    sql += tenant.empty() ? " AND '' = ?" : " AND tenant = ?";
    sql += f.state.empty() ? " AND '' = ?" : " AND state = ?";
    sql += " AND (submitted_at < ? OR (submitted_at = ? AND id < ?))";
    sql += fmt::format(" ORDER BY submitted_at DESC, id DESC LIMIT {}", f.limit + 1);
    const JobCursor c = f.before.value_or(JobCursor{std::numeric_limits<int64_t>::max(), std::numeric_limits<JobId>::max()});
    const store::Value p[] = {tenant, f.state, c.submitted_at, c.submitted_at, c.id};
    TIDAL_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(sql, p));
    for (const store::Row& row : rows.rows) {
      TIDAL_ASSIGN_OR_RETURN(StoredJob sj, JobFromRow(row));
      if (static_cast<int64_t>(page.jobs.size()) == f.limit) {
        page.next = key(page.jobs.back());
        break;
      }
      sj.view.tier = TierOf(sj.view.tenant);
      page.jobs.push_back(std::move(sj.view));
    }
    return Ok();
  });
  if (!st) return std::unexpected(FromError(st.error()));
  // Newer states than the store's row (a cycle not yet written) come from the snapshot.
  if (std::shared_ptr<const Snapshot> s = snapshot()) {
    for (JobView& v : page.jobs)
      if (const JobView* live = s->Find(v.id)) v = *live;
  }
  return page;
}

ApiResult<nlohmann::json> Daemon::OnScheduler(const std::function<ApiResult<nlohmann::json>()>& fn) {
  bool threaded = false;
  {
    std::lock_guard lock(mu_);
    threaded = thread_.joinable() && !stop_;
  }
  if (!threaded || std::this_thread::get_id() == scheduler_thread_) return fn();
  auto promise = std::make_shared<std::promise<ApiResult<nlohmann::json>>>();
  std::future<ApiResult<nlohmann::json>> done = promise->get_future();
  {
    std::lock_guard lock(mu_);
    tasks_.push_back([promise, &fn] { promise->set_value(fn()); });
  }
  cv_.notify_all();
  if (done.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    return std::unexpected(ApiError{503, "unavailable", "the scheduler did not answer within 30 s; try again", ""});
  }
  return done.get();
}

Result<nlohmann::json> Daemon::ExplainNow(JobId id) {
  nlohmann::json out = {{"job_id", id}, {"now", replay_->now()}};
  auto it = recs_.find(id);
  if (it == recs_.end() || !replay_->live().contains(id)) {
    out["state"] = it == recs_.end() ? "accepted" : it->second.view.state;
    out["causes"] = nlohmann::json::array();
    out["start_estimate"] = nullptr;
    return out;
  }
  out["state"] = it->second.view.state;
  nlohmann::json causes = nlohmann::json::array();
  if (!replay_->running(id)) {
    for (const BlockingCause& c : replay_->queue().Explain(*it->second.job)) {
      // GPU shortfalls in GPUs (quota counts milli-GPU); others in their unit.
      const bool milli_gpu = c.unit == "milli-gpu";
      causes.push_back({{"kind", c.kind},
                        {"detail", c.detail},
                        {"shortfall", milli_gpu ? nlohmann::json(static_cast<double>(c.shortfall) / kMilliPerGpu) : nlohmann::json(c.shortfall)},
                        {"shortfall_unit", milli_gpu ? "gpu" : c.unit},
                        {"resolvable", c.resolvable}});
    }
    TIDAL_ASSIGN_OR_RETURN(
        sim::StartEstimate e,
        sim::EstimateStart(*replay_, id, {.f = 2, .samples = config_.start_estimate_samples, .seed = config_.seed}));
    out["start_estimate"] = {{"p50", e.p50_s >= 0 ? nlohmann::json(e.p50_s) : nlohmann::json()},
                             {"p90", e.p90_s >= 0 ? nlohmann::json(e.p90_s) : nlohmann::json()},
                             {"samples", e.samples}};
  } else {
    out["start_estimate"] = nullptr;
  }
  out["causes"] = std::move(causes);
  return out;
}

ApiResult<nlohmann::json> Daemon::Explain(JobId id, const Principal& by) {
  auto v = GetJob(id, by);
  if (!v) return std::unexpected(v.error());
  return OnScheduler([&]() -> ApiResult<nlohmann::json> {
    auto r = ExplainNow(id);
    if (!r) return std::unexpected(FromError(r.error()));
    return *r;
  });
}

Result<nlohmann::json> Daemon::SimulateNow(const WhatIf& change, const Principal& by) {
  // What the scheduler plans with: each live job runs its estimate.
  auto copies = [&] {
    std::vector<Job> jobs;
    for (const auto& [id, j] : replay_->live()) {
      jobs.push_back(*j);
      jobs.back().duration_s = j->PlannedDuration();
    }
    return jobs;
  };
  TIDAL_ASSIGN_OR_RETURN(auto before, sim::ForwardStarts(*replay_, copies(), {}));
  std::vector<Job> extra;
  const JobId base = next_api_id_.load() + (JobId{1} << 30);
  for (size_t i = 0; i < change.submit.size(); ++i) {
    Job j = ToJob(change.submit[i], base + static_cast<JobId>(i), replay_->now(), largest_host_gpus_);
    j.duration_s = j.estimate_s;
    if (cost_ && j.num_gpu > 1 && j.gpu_milli == kMilliPerGpu) j.tp_group = cost_->TensorParallel(j.num_gpu);
    extra.push_back(std::move(j));
  }
  // The drains and quota changes, applied to the fork exactly as the live
  // inputs would be (the same checks: a drained node or a bad quota is an
  // error here as it would be there).
  std::vector<OpInput> ops;
  for (const std::string& node : change.drain) ops.push_back({.kind = "drain", .body = {{"node", node}, {"reason", "what-if"}}});
  for (const QuotaChange& q : change.quota) ops.push_back({.kind = "quota", .body = q.ToJson()});
  auto apply = [&](sim::Replay& fork) -> Status {
    for (const OpInput& op : ops) TIDAL_RETURN_IF_ERROR(ApplyOp(op, fork));
    return Ok();
  };
  TIDAL_ASSIGN_OR_RETURN(auto after, sim::ForwardStarts(*replay_, copies(), extra, ops.empty() ? nullptr : std::function<Status(sim::Replay&)>(apply)));
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& [id, j] : replay_->live()) {
    if (replay_->running(id)) continue;
    const Rec& r = recs_.at(id);
    if (!CanRead(by, r.view.tenant)) continue;
    auto b = before.find(id);
    auto a = after.find(id);
    nlohmann::json one = {{"id", id},
                          {"tenant", r.view.tenant},
                          {"start_before", b == before.end() ? nlohmann::json() : nlohmann::json(b->second)},
                          {"start_after", a == after.end() ? nlohmann::json() : nlohmann::json(a->second)}};
    one["delta_s"] = (b != before.end() && a != after.end()) ? nlohmann::json(a->second - b->second) : nlohmann::json();
    jobs.push_back(std::move(one));
  }
  nlohmann::json submitted = nlohmann::json::array();
  for (size_t i = 0; i < extra.size(); ++i) {
    auto a = after.find(extra[i].id);
    submitted.push_back({{"index", i}, {"start", a == after.end() ? nlohmann::json() : nlohmann::json(a->second)}});
  }
  return nlohmann::json{{"now", replay_->now()}, {"jobs", jobs}, {"submitted", submitted}};
}

ApiResult<nlohmann::json> Daemon::Simulate(const WhatIf& change, const Principal& by) {
  WhatIf checked = change;
  for (size_t i = 0; i < checked.submit.size(); ++i) {
    if (auto ok = CheckSubmit(checked.submit[i], by); !ok) {
      ApiError e = ok.error();
      e.message = fmt::format("submit[{}]: {}", i, e.message);
      if (!e.field.empty()) e.field = fmt::format("submit[{}].{}", i, e.field);
      return std::unexpected(e);
    }
  }
  // Asking what a drain or a quota change would do is the operator's and the
  // admin's question (it tells of every tenant's jobs).
  if (!checked.drain.empty() && !CanOperate(by)) {
    return std::unexpected(Forbidden(fmt::format("a {} token may not simulate drains", RoleName(by.role))));
  }
  if (!checked.quota.empty() && !CanSetQuota(by)) {
    return std::unexpected(Forbidden(fmt::format("a {} token may not simulate quota changes", RoleName(by.role))));
  }
  return OnScheduler([&]() -> ApiResult<nlohmann::json> {
    auto r = SimulateNow(checked, by);
    if (!r) {
      if (r.error().code == ErrorCode::kFailedPrecondition) return std::unexpected(Conflict(r.error().message));
      return std::unexpected(FromError(r.error()));
    }
    return *r;
  });
}

ApiResult<std::vector<TenantView>> Daemon::Tenants(const Principal& by) {
  std::vector<TenantView> out;
  std::shared_ptr<const Snapshot> s = snapshot();
  if (!s) return out;
  for (const TenantView& t : s->tenants)
    if (CanRead(by, t.name)) out.push_back(t);
  return out;
}

ApiError FromError(const Error& e) {
  switch (e.code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kParse: return BadRequest(e.message);
    case ErrorCode::kNotFound: return NotFound(e.message);
    case ErrorCode::kFailedPrecondition: return Conflict(e.message);
    default: return {500, "internal", e.message, ""};
  }
}

std::string ErrorBody(const ApiError& e) {
  nlohmann::json j = {{"error", {{"code", e.code}, {"message", e.message}}}};
  if (!e.field.empty()) j["error"]["field"] = e.field;
  return j.dump();
}

}  // namespace tidal::server
