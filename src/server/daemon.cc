#include "server/daemon.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "scheduler/tenant_queue.h"
#include "server/job_rows.h"
#include "sim/workload_model.h"

namespace tidal::server {

namespace {
// How stale the thread lets reads get while only events (no API input) come.
constexpr double kPublishEveryS = 0.05;
}  // namespace

WallClock SystemWallClock() {
  return [] {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
}

Daemon::Daemon(DaemonConfig config, store::Store& store, WallClock wall)
    : config_(std::move(config)), store_(store), wall_(std::move(wall)), commit_(store) {}

Daemon::~Daemon() { Stop(); }

int64_t Daemon::Now() const {
  const double elapsed = std::max(0.0, wall_() - static_cast<double>(epoch_wall_));
  return epoch_wall_ + static_cast<int64_t>(std::floor(elapsed * config_.speed));
}

std::string Daemon::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

std::shared_ptr<const Snapshot> Daemon::snapshot() const { return snapshot_.load(); }

Result<std::unique_ptr<Daemon>> Daemon::Open(DaemonConfig config, store::Store& store, WallClock wall) {
  std::unique_ptr<Daemon> d(new Daemon(std::move(config), store, std::move(wall)));
  TIDAL_RETURN_IF_ERROR(d->Init());
  return d;
}

Status Daemon::Init() {
  // The epoch and the config the store's inputs were recorded under.
  std::map<std::string, std::string> meta;
  TIDAL_RETURN_IF_ERROR(store_.Write([&](store::Tx& tx) -> Status {
    meta.clear();
    TIDAL_ASSIGN_OR_RETURN(store::Rows rows, tx.Query("SELECT key, value FROM daemon_meta"));
    for (const store::Row& r : rows.rows) {
      TIDAL_ASSIGN_OR_RETURN(std::string k, store::AsText(r, 0));
      TIDAL_ASSIGN_OR_RETURN(std::string v, store::AsText(r, 1));
      meta[k] = v;
    }
    if (!meta.empty()) return Ok();
    const auto epoch = static_cast<int64_t>(std::floor(wall_()));
    meta = {{"epoch_wall", std::to_string(epoch)}, {"config_digest", config_.digest}, {"config_source", config_.source}};
    for (const auto& [k, v] : meta) {
      const store::Value p[] = {k, v};
      TIDAL_RETURN_IF_ERROR(tx.Exec("INSERT INTO daemon_meta (key, value) VALUES (?, ?)", p));
    }
    return Ok();
  }));
  if (meta["config_digest"] != config_.digest) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "the store {} holds a daemon started with the config {} (digest {}); {} (digest {}) differs, so its "
                     "recorded inputs would not replay to the same state. Start with that config, or give another --store",
                     store_.display_url(), meta["config_source"], meta["config_digest"].substr(0, 12), config_.source,
                     config_.digest.substr(0, 12));
  }
  epoch_wall_ = std::stoll(meta["epoch_wall"]);

  TIDAL_ASSIGN_OR_RETURN(ClusterState cluster, ClusterState::Build(config_.nodes));
  for (NodeId n = 0; n < cluster.num_nodes(); ++n) largest_host_gpus_ = std::max(largest_host_gpus_, cluster.gpu_count(n));
  if (config_.topology) {
    TIDAL_RETURN_IF_ERROR(cluster.AttachTopology(config_.topology));
    cost_ = std::make_unique<sim::PlannerPlacementCost>(cluster, sim::WorkloadModel::Default());
    for (Job& j : config_.trace)
      if (j.num_gpu > 1 && j.gpu_milli == kMilliPerGpu) j.tp_group = cost_->TensorParallel(j.num_gpu);
  }
  sim::ReplaySetup setup{.placer = config_.placer, .queue = config_.queue, .tenants = config_.tenants, .cost = cost_.get(),
                         .seed = config_.seed};
  if (UsesTenantQueue(config_.queue)) {
    TIDAL_ASSIGN_OR_RETURN(setup.tenant_options, TenantQueueOptionsFor(config_.queue));
    setup.tenant_options.checkpoint_interval_s = config_.checkpoint_interval_s;
    setup.tenant_options.restart_penalty_s = config_.restart_penalty_s;
  }
  TIDAL_ASSIGN_OR_RETURN(replay_, sim::Replay::Make(std::move(cluster), std::move(setup), epoch_wall_));
  if (config_.market) {
    prices_.emplace(config_.market->book, config_.market->curve, config_.market->pricer);
    const ClusterState& c = replay_->cluster();
    for (size_t m = 0; m < c.models().size(); ++m) TIDAL_RETURN_IF_ERROR(prices_->AddPool(c.models().Name(static_cast<GpuModelId>(m)), epoch_wall_));
  }

  // The API's jobs, as stored.
  std::vector<Rec> api;
  std::unordered_map<JobId, std::string> stored_state;
  TIDAL_RETURN_IF_ERROR(store_.Read([&](store::Tx& tx) -> Status {
    api.clear();
    stored_state.clear();
    TIDAL_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(std::string(kJobSelect) + " ORDER BY id"));
    for (const store::Row& row : rows.rows) {
      TIDAL_ASSIGN_OR_RETURN(StoredJob sj, JobFromRow(row));
      stored_state[sj.view.id] = sj.view.state;
      if (sj.view.source != "api") continue;
      Rec r{.view = sj.view, .arrived_at = sj.arrived_at, .cancel_at = sj.cancel_at, .spec = sj.request.ToJson().dump()};
      r.job = std::make_unique<Job>(ToJob(sj.request, sj.view.id, sj.view.submitted_at, largest_host_gpus_));
      if (config_.slurm) r.job->duration_s = kOpenRunS;
      r.view.tier = TierOf(r.view.tenant);
      if (cost_ && r.job->num_gpu > 1 && r.job->gpu_milli == kMilliPerGpu) r.job->tp_group = cost_->TensorParallel(r.job->num_gpu);
      api.push_back(std::move(r));
    }
    return Ok();
  }));
  JobId max_id = 0;
  for (const Rec& r : api) max_id = std::max(max_id, r.view.id);
  next_api_id_ = max_id + 1;
  // Operator inputs (drains, quota changes), as stored.
  std::vector<std::pair<int64_t, OpInput>> ops;
  TIDAL_RETURN_IF_ERROR(store_.Read([&](store::Tx& tx) -> Status {
    ops.clear();
    TIDAL_ASSIGN_OR_RETURN(store::Rows rows, tx.Query("SELECT id, at, kind, body FROM daemon_inputs ORDER BY id"));
    for (const store::Row& row : rows.rows) {
      TIDAL_ASSIGN_OR_RETURN(int64_t id, store::AsInt(row, 0));
      TIDAL_ASSIGN_OR_RETURN(int64_t at, store::AsInt(row, 1));
      TIDAL_ASSIGN_OR_RETURN(std::string kind, store::AsText(row, 2));
      TIDAL_ASSIGN_OR_RETURN(std::string body, store::AsText(row, 3));
      auto parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_discarded() || !parsed.is_object()) {
        return MakeError(ErrorCode::kParse, "store {}: daemon_inputs row {} has a body that is not a JSON object: {}", store_.display_url(),
                         id, body);
      }
      ops.push_back({at, OpInput{.id = id, .kind = kind, .body = std::move(parsed)}});
      next_op_id_ = std::max(next_op_id_, id + 1);
    }
    return Ok();
  }));

  TIDAL_ASSIGN_OR_RETURN(market::Ledger ledger, market::Ledger::Open(store_));
  ledger_.emplace(std::move(ledger));
  if (config_.slurm) TIDAL_RETURN_IF_ERROR(OpenSlurm());
  TIDAL_RETURN_IF_ERROR(CatchUp(std::move(api), std::move(ops)));
  for (const auto& [id, rec] : recs_) {
    auto it = stored_state.find(id);
    if (it == stored_state.end()) continue;  // arrived during the catch-up: written below
    if (it->second != rec.view.state) {
      ++reconciled_;
      dirty_.insert(id);
    }
  }
  if (reconciled_ > 0) spdlog::info("serve: the replay of the stored inputs corrected {} job states", reconciled_);
  TIDAL_RETURN_IF_ERROR(Flush());
  if (binder_) TIDAL_RETURN_IF_ERROR(ReconcileSlurm());
  Publish();
  return Ok();
}

Status Daemon::CatchUp(std::vector<Rec> api, std::vector<std::pair<int64_t, OpInput>> ops) {
  catching_up_ = true;
  const int64_t now = Now();
  // Recorded inputs by batch time: arrivals, cancels, operator inputs.
  struct Batch {
    std::vector<Rec> first;
    std::vector<JobId> second;
    std::vector<OpInput> ops;
  };
  std::map<int64_t, Batch> inputs;
  for (auto& [t, op] : ops) inputs[t].ops.push_back(std::move(op));
  std::vector<Rec> unseen;
  std::vector<JobId> cancel_unseen;
  for (Rec& r : api) {
    if (r.cancel_at) inputs[*r.cancel_at].second.push_back(r.view.id);
    else if (r.view.cancel_requested) cancel_unseen.push_back(r.view.id);
    if (r.arrived_at) {
      const int64_t t = *r.arrived_at;
      inputs[t].first.push_back(std::move(r));
    } else {
      unseen.push_back(std::move(r));
    }
  }
  for (auto& [t, in] : inputs) {
    TIDAL_RETURN_IF_ERROR(AdvanceTo(t, /*inclusive=*/false));
    TIDAL_RETURN_IF_ERROR(RunBatch(t, std::move(in.first), std::move(in.second), std::move(in.ops)));
  }
  TIDAL_RETURN_IF_ERROR(AdvanceTo(now, /*inclusive=*/true));
  catching_up_ = false;
  std::lock_guard lock(mu_);
  for (Rec& r : unseen) {
    r.view.state = "accepted";
    accepted_[r.view.id] = r.view;
    inbox_jobs_.push_back(std::move(r));
  }
  inbox_cancels_.insert(inbox_cancels_.end(), cancel_unseen.begin(), cancel_unseen.end());
  return Ok();
}

int64_t Daemon::NextTraceArrival() const {
  if (trace_next_ >= config_.trace.size()) return kNoReservation;
  return epoch_wall_ + *config_.trace[trace_next_].submit_time_s;
}

Status Daemon::AdvanceTo(int64_t t, bool inclusive) {
  for (;;) {
    const int64_t next = replay_->PeekBatch(NextTraceArrival());
    if (next == kNoReservation || next > t || (!inclusive && next == t)) return Ok();
    TIDAL_RETURN_IF_ERROR(RunBatch(next, {}, {}));
  }
}

void Daemon::Ended(Rec& r, std::string state, int64_t t) {
  r.view.state = std::move(state);
  r.view.ended_at = t;
  r.view.placement = nlohmann::json::array();
  ended_.push_back(r.view.id);
  dirty_.insert(r.view.id);
}

Status Daemon::RunBatch(int64_t t, std::vector<Rec> arrivals, std::vector<JobId> cancels, std::vector<OpInput> ops) {
  const auto wall_start = std::chrono::steady_clock::now();
  const int64_t got = replay_->NextBatch(std::min(NextTraceArrival(), t));
  if (got != t) return MakeError(ErrorCode::kInternal, "batch at {} expected, the replay is at {}", t, got);
  std::vector<const Job*> finished;
  std::vector<UnresolvableJob> rejected;
  TIDAL_RETURN_IF_ERROR(replay_->FinishesAt(t, finished));
  // Trace arrivals.
  while (trace_next_ < config_.trace.size() && NextTraceArrival() == t) {
    const Job& tj = config_.trace[trace_next_++];
    Rec r;
    r.job = std::make_unique<Job>(tj);
    r.job->submit_time_s = t;
    r.view = TraceView(*r.job, t);
    r.view.tier = TierOf(r.view.tenant);
    r.arrived_at = t;
    r.spec = TraceRequest(*r.job).ToJson().dump();
    const JobId id = tj.id;
    auto [it, inserted] = recs_.emplace(id, std::move(r));
    if (!inserted) return MakeError(ErrorCode::kInternal, "trace job {} arrived twice", id);
    TIDAL_RETURN_IF_ERROR(replay_->Arrive(*it->second.job, rejected));
    it->second.view.state = "pending";
    dirty_.insert(id);
  }
  // API arrivals, by id.
  std::sort(arrivals.begin(), arrivals.end(), [](const Rec& a, const Rec& b) { return a.view.id < b.view.id; });
  for (Rec& r : arrivals) {
    const JobId id = r.view.id;
    r.arrived_at = t;
    r.view.state = "pending";
    auto [it, inserted] = recs_.emplace(id, std::move(r));
    if (!inserted) return MakeError(ErrorCode::kInternal, "job {} arrived twice", id);
    TIDAL_RETURN_IF_ERROR(replay_->Arrive(*it->second.job, rejected));
    dirty_.insert(id);
  }
  // Cancels, by id: a waiting job leaves now, a running one ends now.
  std::sort(cancels.begin(), cancels.end());
  cancels.erase(std::unique(cancels.begin(), cancels.end()), cancels.end());
  for (JobId id : cancels) {
    auto it = recs_.find(id);
    if (it == recs_.end() || !it->second.view.live()) continue;  // already ended
    Rec& r = it->second;
    r.cancel_at = t;
    r.view.cancel_requested = true;
    const bool running = replay_->running(id);
    TIDAL_RETURN_IF_ERROR(replay_->Cancel(id, t));
    if (!running) Ended(r, "cancelled", t);
    dirty_.insert(id);
  }
  // Operator inputs, by id (recorded: a failure here is the daemon's own),
  // before the finishes they cause (an "end" from Slurm).
  std::sort(ops.begin(), ops.end(), [](const OpInput& a, const OpInput& b) { return a.id < b.id; });
  for (const OpInput& op : ops) {
    if (Status s = ApplyOp(op, *replay_); !s) {
      return MakeError(ErrorCode::kInternal, "operator input {} ({} {}) recorded for {} does not apply: {}", op.id, op.kind,
                       op.body.dump(), t, s.error().message);
    }
    if (op.kind == "drain" || op.kind == "resume") {
      const std::string node = op.body.value("node", "");
      const NodeId n = *replay_->cluster().FindNode(node);
      if (op.kind == "drain") drained_[n] = op.body.value("reason", "");
      else drained_.erase(n);
      // An operator's drain reaches the manager too; one that came from it
      // does not go back.
      if (binder_ && !catching_up_ && !op.body.value("from_slurm", false)) {
        bind_actions_.push_back({op.kind == "drain" ? BindAction::kDrain : BindAction::kResume, 0, node,
                                 "tidal: " + op.body.value("reason", std::string("drained"))});
      }
    }
    if (op.kind == "end") {
      ended_by_slurm_[op.body.value("job", JobId{0})] = {op.body.value("state", "succeeded"), op.body.value("reason", "")};
    }
    next_op_id_ = std::max(next_op_id_, op.id + 1);
  }
  TIDAL_RETURN_IF_ERROR(replay_->FinishesAt(t, finished));
  for (const Job* j : finished) {
    Rec& r = recs_.at(j->id);
    if (auto e = ended_by_slurm_.find(j->id); e != ended_by_slurm_.end()) {
      if (!e->second.second.empty()) r.view.reason = e->second.second;
      Ended(r, e->second.first, t);
      ended_by_slurm_.erase(e);
      continue;
    }
    Ended(r, r.cancel_at ? "cancelled" : "succeeded", t);
  }
  for (const UnresolvableJob& u : rejected) {
    Rec& r = recs_.at(u.job->id);
    r.view.reason = u.reason;
    Ended(r, "failed", t);
    metrics_.errors += 1;
  }
  TIDAL_ASSIGN_OR_RETURN(QueuePass pass, replay_->Pass(t));
  const ClusterState& c = replay_->cluster();
  for (const PreemptedJob& pj : pass.preempted) {
    Rec& r = recs_.at(pj.job->id);
    r.view.state = "pending";
    r.view.placement = nlohmann::json::array();
    ++r.view.preemptions;
    dirty_.insert(r.view.id);
    if (!catching_up_) {
      if (r.view.tier == "spot") metrics_.preempted_spot += 1;
      else if (r.view.tier == "standard") metrics_.preempted_reclaim += 1;
      else metrics_.preempted_priority += 1;
    }
  }
  for (const Job* j : pass.started) {
    Rec& r = recs_.at(j->id);
    if (!r.view.started_at && !catching_up_) {
      metrics_.admission_wait_seconds.Observe(static_cast<double>(t - r.view.submitted_at));
    }
    if (!r.view.started_at) r.view.started_at = t;
    r.view.state = "running";
    r.view.placement = PlacementJson(c, *c.FindAllocation(j->id));
    dirty_.insert(j->id);
  }
  for (const UnresolvableJob& u : pass.unresolvable) {
    Rec& r = recs_.at(u.job->id);
    r.view.reason = u.reason;
    Ended(r, "failed", t);
  }
  if (binder_ && !catching_up_) QueueBindActions(pass, cancels);
  if (!catching_up_) {
    metrics_.scheduled += static_cast<int64_t>(pass.started.size());
    metrics_.unschedulable += static_cast<int64_t>(replay_->queue().waiting());
    metrics_.errors += static_cast<int64_t>(pass.unresolvable.size());
    metrics_.cycle_seconds.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count());
  }
  while (ended_.size() > 2000) ended_.pop_front();
  TIDAL_RETURN_IF_ERROR(ObservePrices(t));
  last_batch_ = t;
  ++batches_;
  return Ok();
}

// Each pool's utilisation after the batch at t, for its dynamic price
// (replayed on restart like everything else, so the price history is too).
Status Daemon::ObservePrices(int64_t t) {
  if (!prices_) return Ok();
  const ClusterState& c = replay_->cluster();
  std::vector<int64_t> cap(c.models().size(), 0), used(c.models().size(), 0);
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    if (c.gpu_count(n) == 0) continue;
    const auto m = static_cast<size_t>(c.gpu_model(n));
    // Utilisation of the capacity in service: a drained node's idle GPUs
    // are neither for rent nor used.
    cap[m] += int64_t{c.gpu_count(n)} * kMilliPerGpu - c.cordon_gpu_milli(n);
    used[m] += int64_t{c.gpu_count(n)} * kMilliPerGpu - c.gpu_milli_free(n) - c.cordon_gpu_milli(n);
  }
  for (size_t m = 0; m < cap.size(); ++m) {
    if (cap[m] == 0) continue;
    TIDAL_RETURN_IF_ERROR(prices_->Observe(c.models().Name(static_cast<GpuModelId>(m)), t,
                                           static_cast<double>(used[m]) / static_cast<double>(cap[m])));
  }
  return Ok();
}

Status Daemon::Step(double publish_every_s) {
  const int64_t now = Now();
  TIDAL_RETURN_IF_ERROR(AdvanceTo(now, /*inclusive=*/true));
  std::vector<Rec> jobs;
  std::vector<JobId> cancels;
  std::deque<std::function<void()>> tasks;
  {
    std::lock_guard lock(mu_);
    jobs.swap(inbox_jobs_);
    cancels.swap(inbox_cancels_);
  }
  const bool inputs = !jobs.empty() || !cancels.empty();
  if (inputs) {
    const int64_t t = std::max(now, last_batch_ + 1);
    TIDAL_RETURN_IF_ERROR(AdvanceTo(t, /*inclusive=*/false));
    std::vector<JobId> taken;
    for (const Rec& r : jobs) taken.push_back(r.view.id);
    TIDAL_RETURN_IF_ERROR(RunBatch(t, std::move(jobs), std::move(cancels)));
    std::lock_guard lock(mu_);
    for (JobId id : taken) accepted_.erase(id);
  }
  // Prices move on between events too: the utilisation since the last
  // batch holds, and the periods that ended by now are announced (the same
  // announcements a replay makes, since it holds the same values).
  if (prices_ && now > price_clock_) {
    TIDAL_RETURN_IF_ERROR(prices_->AdvanceTo(now));
    price_clock_ = now;
  }
  const double wall = wall_();
  if (!inputs && publish_every_s > 0 && wall - published_at_ < publish_every_s) {
    unpublished_ = true;  // written and published by a step within publish_every_s
  } else {
    Status flushed = Flush();
    {
      std::lock_guard lock(mu_);
      last_error_ = flushed ? "" : flushed.error().message;
    }
    if (!flushed) return flushed;
    if (binder_) RunBindActions();
    Publish();
    published_at_ = wall;
    unpublished_ = false;
  }
  {
    std::lock_guard lock(mu_);
    tasks.swap(tasks_);
  }
  for (auto& task : tasks) task();
  if (binder_ && wall - polled_at_ >= config_.slurm->poll_s) {
    polled_at_ = wall;
    if (Status s = PollSlurm(); !s) spdlog::warn("serve: reading Slurm's jobs failed: {}", s.error().message);
  }
  return Ok();
}

void Daemon::Start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
}

void Daemon::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Tasks still queued get an answer.
  std::deque<std::function<void()>> tasks;
  {
    std::lock_guard lock(mu_);
    tasks.swap(tasks_);
  }
  for (auto& task : tasks) task();
}

void Daemon::Loop() {
  scheduler_thread_ = std::this_thread::get_id();
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (stop_) break;
      // Sleep until the next event is due (in wall time), an input
      // arrives, or at most a second.
      const int64_t next = std::min(replay_->PeekBatch(NextTraceArrival()), kNoReservation);
      double wait_s = unpublished_ ? kPublishEveryS : 1.0;
      if (next != kNoReservation) {
        const double due_wall = static_cast<double>(epoch_wall_) + static_cast<double>(next - epoch_wall_) / config_.speed;
        wait_s = std::clamp(due_wall - wall_(), 0.0, wait_s);
      }
      if (inbox_jobs_.empty() && inbox_cancels_.empty() && tasks_.empty() && wait_s > 0) {
        cv_.wait_for(lock, std::chrono::duration<double>(wait_s),
                     [&] { return stop_ || !inbox_jobs_.empty() || !inbox_cancels_.empty() || !tasks_.empty(); });
      }
      if (stop_) break;
    }
    // Let a burst of submissions gather into one batch.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (Status s = Step(kPublishEveryS); !s) {
      spdlog::error("serve: scheduling step failed: {}", s.error().message);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  scheduler_thread_ = {};
}

}  // namespace tidal::server
