// The daemon on a real Slurm (daemon.h, docs/slurm.md): the same scheduler
// decides; each started job becomes a held Slurm batch job pinned to the
// nodes tidal chose and released, each preemption a requeue-hold, each
// cancel an scancel; Slurm's report of a job's end comes back as a recorded
// input ("end") so that a restart replays it like any other.
#include <algorithm>
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

// Jobs tidal runs whose Slurm job ended end here too, and nodes Slurm took
// out of service (drained, down, not responding) or gave back are cordoned
// or uncordoned: in one recorded batch.
Status Daemon::PollSlurm() {
  TIDAL_ASSIGN_OR_RETURN(std::vector<slurm::SlurmJob> jobs, binder_->Jobs());
  TIDAL_ASSIGN_OR_RETURN(std::vector<slurm::SlurmNode> nodes, binder_->Nodes());
  std::map<int64_t, const slurm::SlurmJob*> by_slurm_id;
  for (const slurm::SlurmJob& j : jobs) by_slurm_id[j.id] = &j;
  std::vector<OpInput> inputs;
  for (const auto& [id, sid] : slurm_id_) {
    if (!replay_->running(id)) continue;
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
  for (int64_t sid : r.extra) {
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
