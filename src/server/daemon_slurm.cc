// The daemon on a real Slurm (daemon.h, docs/slurm.md): the same scheduler
// decides; each started job becomes a held Slurm batch job pinned to the
// nodes tidal chose and released, each preemption a requeue-hold, each
// cancel an scancel; Slurm's report of a job's end comes back as a recorded
// input ("end") so that a restart replays it like any other. Users' own
// sbatch jobs, held in tidal's partition by data/slurm/job_submit.lua, are
// adopted: each becomes a tidal job, and that Slurm job is the one placed.
#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server/daemon.h"

namespace tidal::server {

namespace {

const Principal kSlurmPrincipal{.token_id = "slurm", .role = Role::kAdmin, .name = "slurm binder"};

std::string Substitute(std::string text, const std::string& key, const std::string& value) {
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size())) text.replace(at, key.size(), value);
  return text;
}

}  // namespace

Status Daemon::OpenSlurm() {
  const SlurmBinderConfig& sc = *config_.slurm;
  slurm_run_ = std::make_unique<slurm::ProcessRunner>(std::map<std::string, std::string>{{"SLURM_CONF", sc.slurm_conf}});
  binder_ = std::make_unique<slurm::SlurmBinder>(
      *slurm_run_, slurm::BinderOptions{.partition = sc.partition, .output = sc.output, .workdir = sc.workdir});
  return Ok();
}

void Daemon::QueueBindActions(const QueuePass& pass, const std::vector<JobId>& cancelled) {
  for (const PreemptedJob& pj : pass.preempted) bind_actions_.push_back({BindAction::kRequeue, pj.job->id});
  for (JobId id : cancelled) bind_actions_.push_back({BindAction::kCancel, id});
  for (const Job* j : pass.started) bind_actions_.push_back({BindAction::kPlace, j->id});
}

Result<int64_t> Daemon::SubmitAndPlace(JobId id) {
  const ClusterState& c = replay_->cluster();
  const Placement* p = c.FindAllocation(id);
  if (p == nullptr) return MakeError(ErrorCode::kFailedPrecondition, "job {} holds no placement to bind", id);
  std::vector<std::string> nodes;
  int32_t gpus = 0;
  for (const NodeAssignment& a : p->assignments) {
    nodes.push_back(c.node_name(a.node));
    // Slurm asks the same GRES count of every node: the largest share (a
    // gang split unevenly over hosts holds more in Slurm than in tidal).
    gpus = std::max(gpus, static_cast<int32_t>(a.gpus.size()));
  }
  auto it = slurm_id_.find(id);
  if (it == slurm_id_.end()) {
    const Rec& r = recs_.at(id);
    auto request = ParseSubmitBody(r.spec);
    const int64_t runtime = request && request->runtime_s > 0 ? request->runtime_s : r.view.estimated_runtime_s;
    std::string script = Substitute(config_.slurm->script, "{runtime_s}", std::to_string(runtime));
    script = Substitute(script, "{id}", std::to_string(id));
    TIDAL_ASSIGN_OR_RETURN(int64_t sid, binder_->SubmitHeld({.tidal_id = id,
                                                             .nodes = static_cast<int32_t>(nodes.size()),
                                                             .gpus_per_node = gpus,
                                                             .time_limit_s = 0,
                                                             .script = script}));
    it = slurm_id_.emplace(id, sid).first;
  }
  TIDAL_RETURN_IF_ERROR(binder_->Place(it->second, nodes));
  return it->second;
}

void Daemon::RunBindActions() {
  std::vector<BindAction> actions;
  actions.swap(bind_actions_);
  for (const BindAction& a : actions) {
    Status s = Ok();
    auto sid = slurm_id_.find(a.job);
    switch (a.kind) {
      case BindAction::kPlace:
        if (!replay_->running(a.job)) break;  // ended or preempted again in a later batch of the same step
        if (auto placed = SubmitAndPlace(a.job); !placed) s = std::unexpected(placed.error());
        break;
      case BindAction::kRequeue:
        if (sid != slurm_id_.end()) s = binder_->Requeue(sid->second);
        break;
      case BindAction::kDrain: s = binder_->DrainNode(a.node, a.reason); break;
      case BindAction::kResume: s = binder_->ResumeNode(a.node); break;
      case BindAction::kCancel:
        if (sid != slurm_id_.end()) {
          s = binder_->Cancel(sid->second);
          slurm_id_.erase(sid);
        }
        break;
    }
    // The poll and the restart's reconciliation repair what failed here.
    if (!s) spdlog::warn("serve: Slurm binding ({}) failed: {}", a.node.empty() ? fmt::format("job {}", a.job) : "node " + a.node,
                         s.error().message);
  }
}

// A held job in tidal's partition that tidal did not submit is a user's
// sbatch: submitted to tidal as a job of its account's tenant (its user's
// where it has no account) asking its nodes x GRES GPUs for its time limit,
// under the idempotency key slurm:<id>:<submit time> (a retry after a crash
// finds the same tidal job). Its comment then carries the tidal id, so
// placing it pins and releases this very job and a restart finds it again;
// one tidal refuses gets the reason as its comment and is left alone.
void Daemon::AdoptSlurmJobs() {
  auto held = binder_->Adoptable();
  if (!held) {
    spdlog::warn("serve: reading Slurm's held jobs failed: {}", held.error().message);
    return;
  }
  for (const slurm::SlurmJob& j : *held) {
    SubmitRequest r;
    r.name = j.name.empty() ? fmt::format("slurm-{}", j.id) : j.name;
    r.tenant = !j.account.empty() ? j.account : j.user;
    auto gres = slurm::ParseGpuGres(slurm::GresOfTres(j.tres_per_node));
    const int32_t nodes = std::max<int32_t>(j.node_count, 1);
    std::string refused;
    if (!gres) {
      refused = gres.error().message;
    } else if (gres->first <= 0) {
      refused = "it asks no GPU (--gres=gpu:N per node)";
    } else {
      r.gpus = gres->first * nodes;
      if (!gres->second.empty()) {
        std::string model = gres->second;
        for (char& c : model) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        r.gpu_model = {model};
      }
      r.single_node = nodes == 1;
      r.estimated_runtime_s = j.time_limit_min > 0 ? std::min<int64_t>(j.time_limit_min * 60, kMaxRuntimeS) : kMaxRuntimeS;
      r.idempotency_key = fmt::format("slurm:{}:{}", j.id, j.submit_time);
      auto s = Submit(r, kSlurmPrincipal, Audit{.method = "SLURM", .path = fmt::format("sbatch/{}", j.id)});
      if (s) {
        slurm_id_[s->job.id] = j.id;
        if (Status c = binder_->SetComment(j.id, fmt::format("tidal:{}", s->job.id)); !c) {
          spdlog::warn("serve: Slurm job {} is tidal job {}, but its comment could not say so: {}", j.id, s->job.id, c.error().message);
        }
        spdlog::info("serve: adopted Slurm job {} ({} GPUs on {} node(s)) as tidal job {}", j.id, r.gpus, nodes, s->job.id);
        continue;
      }
      refused = s.error().message;
    }
    spdlog::warn("serve: Slurm job {} is not adopted: {}", j.id, refused);
    if (Status c = binder_->SetComment(j.id, "tidal refused: " + refused); !c) {
      spdlog::warn("serve: cannot mark Slurm job {} refused: {}", j.id, c.error().message);
    }
  }
}

// Jobs tidal runs whose Slurm job ended end here too, and nodes Slurm took
// out of service (drained, down, not responding) or gave back are cordoned
// or uncordoned: in one recorded batch.
Status Daemon::PollSlurm() {
  AdoptSlurmJobs();
  TIDAL_ASSIGN_OR_RETURN(std::vector<slurm::SlurmJob> jobs, binder_->Jobs());
  TIDAL_ASSIGN_OR_RETURN(std::vector<slurm::SlurmNode> nodes, binder_->Nodes());
  std::map<int64_t, const slurm::SlurmJob*> by_slurm_id;
  for (const slurm::SlurmJob& j : jobs) by_slurm_id[j.id] = &j;
  std::vector<OpInput> inputs;
  std::vector<JobId> withdrawn;
  for (const auto& [id, sid] : slurm_id_) {
    if (!replay_->running(id)) {
      // An adopted job still queued in tidal whose Slurm job the user
      // cancelled (or Slurm ended): it is withdrawn from tidal too.
      auto it = by_slurm_id.find(sid);
      if (it != by_slurm_id.end() && replay_->live().contains(id) && !slurm::IsLive(*it->second)) withdrawn.push_back(id);
      continue;
    }
    auto it = by_slurm_id.find(sid);
    if (it == by_slurm_id.end()) continue;  // not listed (yet): the restart's reconciliation judges lost jobs
    const slurm::SlurmJob& j = *it->second;
    if (j.state == "PENDING" && j.priority == 0) {
      // Held although tidal runs it: a placement that failed (a requeue
      // still completing when it was placed again). Place it again.
      bind_actions_.push_back({BindAction::kPlace, id});
      continue;
    }
    if (slurm::IsLive(j)) continue;
    const bool ok = j.state == "COMPLETED" && j.exit_code == 0;
    inputs.push_back({.kind = "end",
                    .body = {{"job", id},
                             {"state", ok ? "succeeded" : "failed"},
                             {"reason", ok ? "" : fmt::format("slurm: {} (exit {})", j.state, j.exit_code)},
                             {"slurm_id", sid}}});
  }
  const ClusterState& c = replay_->cluster();
  for (const slurm::SlurmNode& n : nodes) {
    const std::optional<NodeId> id = c.FindNode(n.name);
    if (!id) continue;  // another partition's
    const bool out = slurm::OutOfService(n);
    if (out && !c.cordoned(*id)) {
      inputs.push_back({.kind = "drain",
                      .body = {{"node", n.name}, {"reason", "slurm: " + (!n.reason.empty() ? n.reason : n.state.empty() ? std::string("out of service") : n.state.front())}, {"from_slurm", true}}});
    } else if (!out && c.cordoned(*id)) {
      inputs.push_back({.kind = "resume", .body = {{"node", n.name}, {"from_slurm", true}}});
    }
  }
  for (JobId id : withdrawn) {
    auto c = Cancel(id, kSlurmPrincipal, Audit{.method = "SLURM", .path = fmt::format("scancel/{}", slurm_id_.at(id))});
    if (!c) spdlog::warn("serve: withdrawing tidal job {} (its Slurm job ended while queued) failed: {}", id, c.error().message);
  }
  if (inputs.empty()) {
    RunBindActions();
    return Ok();
  }
  auto t = RecordOps(std::move(inputs), kSlurmPrincipal, nullptr, 0, "");
  if (!t) return MakeError(ErrorCode::kIo, "recording Slurm's job ends: {}", t.error().message);
  return Ok();
}

// After the restart's replay: tidal's running jobs against Slurm's, by tidal
// id. Found live: remembered. Found ended: the end is recorded. Lost (a
// slurmctld crash, or tidal died between its write and the binding):
// submitted and placed again where the replay has them. Any other live job
// of tidal's in Slurm (a run tidal does not have, a second copy): cancelled.
Status Daemon::ReconcileSlurm() {
  TIDAL_ASSIGN_OR_RETURN(std::vector<slurm::SlurmJob> jobs, binder_->Jobs());
  std::set<int64_t> running;
  for (const auto& [id, job] : replay_->live())
    if (replay_->running(id)) running.insert(id);
  const slurm::Reconciliation r = slurm::ReconcileJobs(running, jobs);
  // An adopted job still queued in tidal is held in Slurm waiting for its
  // turn: not an extra to cancel.
  std::set<int64_t> waiting;
  for (const slurm::SlurmJob& j : jobs) {
    const auto tid = slurm::SlurmBinder::TidalId(j);
    if (tid && replay_->live().contains(*tid) && !replay_->running(*tid) && j.state == "PENDING" && j.priority == 0) waiting.insert(j.id);
  }
  for (int64_t sid : r.extra) {
    if (waiting.contains(sid)) continue;
    if (Status s = binder_->Cancel(sid); !s) spdlog::warn("serve: cancelling Slurm job {} failed: {}", sid, s.error().message);
  }
  std::vector<OpInput> ends;
  for (const auto& [id, j] : r.found) {
    slurm_id_[id] = j.id;
    if (slurm::IsLive(j)) {
      // Held (requeued, or never released): it runs where tidal placed it.
      if (j.state == "PENDING" && j.priority == 0) bind_actions_.push_back({BindAction::kPlace, id});
      continue;
    }
    const bool ok = j.state == "COMPLETED" && j.exit_code == 0;
    ends.push_back({.kind = "end",
                    .body = {{"job", id},
                             {"state", ok ? "succeeded" : "failed"},
                             {"reason", ok ? "" : fmt::format("slurm: {} (exit {})", j.state, j.exit_code)},
                             {"slurm_id", j.id}}});
  }
  for (int64_t id : r.lost) bind_actions_.push_back({BindAction::kPlace, id});
  // Adopted jobs still queued in tidal: their Slurm job is the one to place.
  for (const slurm::SlurmJob& j : jobs) {
    if (waiting.contains(j.id)) slurm_id_[*slurm::SlurmBinder::TidalId(j)] = j.id;
  }
  spdlog::info("serve: Slurm reconciliation: {} running jobs found, {} ended while tidal was down, {} lost and bound again, "
               "{} cancelled",
               r.found.size() - ends.size(), ends.size(), r.lost.size(), r.extra.size());
  if (!ends.empty()) {
    auto t = RecordOps(std::move(ends), kSlurmPrincipal, nullptr, 0, "");
    if (!t) return MakeError(ErrorCode::kIo, "recording Slurm's job ends: {}", t.error().message);
  }
  RunBindActions();
  return Ok();
}

}  // namespace tidal::server
