#include "adapters/slurm/binder.h"

#include <cctype>
#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "topology/hostlist.h"

namespace tidal::slurm {

Result<CommandOutput> SlurmBinder::Must(const std::vector<std::string>& argv) {
  TIDAL_ASSIGN_OR_RETURN(CommandOutput out, run_.Run(argv));
  if (out.exit_code != 0) {
    std::string err = out.err.empty() ? out.out : out.err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    return MakeError(ErrorCode::kIo, "'{}' failed (exit {}): {}", CommandLine(argv), out.exit_code, err);
  }
  return out;
}

Result<int64_t> SlurmBinder::SubmitHeld(const BindSpec& s) {
  if (s.tidal_id <= 0) return MakeError(ErrorCode::kInvalidArgument, "a Slurm job needs a positive tidal id, got {}", s.tidal_id);
  if (s.nodes < 1) return MakeError(ErrorCode::kInvalidArgument, "tidal job {}: {} nodes; give at least 1", s.tidal_id, s.nodes);
  if (s.gpus_per_node < 0) return MakeError(ErrorCode::kInvalidArgument, "tidal job {}: negative GPUs per node", s.tidal_id);
  for (char c : s.gpu_type) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
      return MakeError(ErrorCode::kInvalidArgument, "tidal job {}: GPU type '{}' is not a Slurm GRES type name", s.tidal_id, s.gpu_type);
    }
  }
  std::vector<std::string> argv = {"sbatch",
                                   "--hold",
                                   "--parsable",
                                   "--job-name=" + options_.name_prefix + std::to_string(s.tidal_id),
                                   "--comment=tidal:" + std::to_string(s.tidal_id),
                                   "--partition=" + options_.partition,
                                   "--nodes=" + std::to_string(s.nodes),
                                   "--ntasks-per-node=1",
                                   "--requeue",
                                   "--output=" + options_.output,
                                   "--chdir=" + options_.workdir};
  if (s.gpus_per_node > 0) {
    argv.push_back(fmt::format("--gres=gpu:{}{}", s.gpu_type.empty() ? "" : s.gpu_type + ":", s.gpus_per_node));
  }
  if (s.cpus_per_node > 0) argv.push_back(fmt::format("--cpus-per-task={}", s.cpus_per_node));
  if (s.time_limit_s > 0) argv.push_back(fmt::format("--time={}", (s.time_limit_s + 59) / 60));
  argv.push_back("--wrap=" + (s.script.empty() ? std::string("true") : s.script));
  TIDAL_ASSIGN_OR_RETURN(CommandOutput out, Must(argv));
  // --parsable prints "<id>" or "<id>;<cluster>".
  std::string_view text = out.out;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  text = text.substr(0, text.find(';'));
  int64_t id = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || ptr != text.data() + text.size() || id <= 0) {
    return MakeError(ErrorCode::kParse, "sbatch --parsable printed '{}', not a job id", out.out);
  }
  return id;
}

Status SlurmBinder::Place(int64_t slurm_id, const std::vector<std::string>& nodes) {
  if (nodes.empty()) return MakeError(ErrorCode::kInvalidArgument, "Slurm job {}: place it on at least one node", slurm_id);
  const std::string id = std::to_string(slurm_id);
  std::string list;
  for (const std::string& n : nodes) (list += list.empty() ? "" : ",") += n;
  // StartTime=now: a requeued job has Slurm's requeue delay (begin time
  // now + 120 s) as its eligible time; tidal's placement is the decision.
  TIDAL_RETURN_IF_ERROR(
      Must({"scontrol", "update", "JobId=" + id, "ReqNodeList=" + list, "NumNodes=" + std::to_string(nodes.size()), "StartTime=now"}));
  TIDAL_RETURN_IF_ERROR(Must({"scontrol", "release", id}));
  return Ok();
}

Status SlurmBinder::Hold(int64_t slurm_id) {
  TIDAL_RETURN_IF_ERROR(Must({"scontrol", "hold", std::to_string(slurm_id)}));
  return Ok();
}

Status SlurmBinder::Requeue(int64_t slurm_id) {
  TIDAL_RETURN_IF_ERROR(Must({"scontrol", "requeuehold", std::to_string(slurm_id)}));
  return Ok();
}

Status SlurmBinder::Cancel(int64_t slurm_id) {
  TIDAL_RETURN_IF_ERROR(Must({"scancel", std::to_string(slurm_id)}));
  return Ok();
}

Status SlurmBinder::DrainNode(const std::string& node, const std::string& reason) {
  TIDAL_RETURN_IF_ERROR(
      Must({"scontrol", "update", "NodeName=" + node, "State=DRAIN", "Reason=" + (reason.empty() ? std::string("drained through tidal") : reason)}));
  return Ok();
}

Status SlurmBinder::ResumeNode(const std::string& node) {
  TIDAL_RETURN_IF_ERROR(Must({"scontrol", "update", "NodeName=" + node, "State=RESUME"}));
  return Ok();
}

std::optional<int64_t> SlurmBinder::TidalId(const SlurmJob& job) {
  constexpr std::string_view kPrefix = "tidal:";
  if (!job.comment.starts_with(kPrefix)) return std::nullopt;
  const std::string_view rest = std::string_view(job.comment).substr(kPrefix.size());
  int64_t id = 0;
  auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), id);
  if (ec != std::errc() || ptr != rest.data() + rest.size() || id <= 0) return std::nullopt;
  return id;
}

Result<std::vector<SlurmJob>> SlurmBinder::Jobs() {
  TIDAL_ASSIGN_OR_RETURN(CommandOutput out, Must({"squeue", "--json", "--all"}));
  TIDAL_ASSIGN_OR_RETURN(std::vector<SlurmJob> all, ParseSqueueJson(out.out));
  std::vector<SlurmJob> mine;
  for (SlurmJob& j : all)
    if (TidalId(j)) mine.push_back(std::move(j));
  return mine;
}

Result<std::vector<SlurmJob>> SlurmBinder::Adoptable() {
  TIDAL_ASSIGN_OR_RETURN(CommandOutput out, Must({"squeue", "--json", "--all"}));
  TIDAL_ASSIGN_OR_RETURN(std::vector<SlurmJob> all, ParseSqueueJson(out.out));
  std::vector<SlurmJob> held;
  for (SlurmJob& j : all) {
    if (j.partition == options_.partition && j.state == "PENDING" && j.priority == 0 && j.comment.rfind("tidal", 0) != 0) {
      held.push_back(std::move(j));
    }
  }
  return held;
}

Status SlurmBinder::SetComment(int64_t slurm_id, const std::string& comment) {
  TIDAL_RETURN_IF_ERROR(Must({"scontrol", "update", fmt::format("JobId={}", slurm_id), "Comment=" + comment}));
  return Ok();
}

Result<std::vector<SlurmNode>> SlurmBinder::Nodes() {
  TIDAL_ASSIGN_OR_RETURN(CommandOutput out, Must({"sinfo", "--json"}));
  return ParseSinfoJson(out.out);
}

std::vector<int64_t> StuckPending(const std::vector<SlurmJob>& jobs, const std::map<int64_t, int64_t>& released_at, int64_t now,
                                  int64_t timeout_s) {
  std::vector<int64_t> out;
  for (const SlurmJob& j : jobs) {
    // A held job has priority 0 (JobHeldUser, JobHeldAdmin): not released.
    if (j.state != "PENDING" || j.priority == 0) continue;
    auto r = released_at.find(j.id);
    if (r != released_at.end() && now - r->second >= timeout_s) out.push_back(j.id);
  }
  return out;
}

}  // namespace tidal::slurm

namespace tidal::slurm {

bool IsLive(const SlurmJob& job) {
  static const std::set<std::string> kEnded = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL",
                                               "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"};
  return !kEnded.contains(job.state);
}

Reconciliation ReconcileJobs(const std::set<int64_t>& expected, const std::vector<SlurmJob>& jobs) {
  Reconciliation r;
  std::map<int64_t, std::vector<const SlurmJob*>> by_tidal;
  for (const SlurmJob& j : jobs) {
    const auto id = SlurmBinder::TidalId(j);
    if (!id) continue;
    if (!expected.contains(*id)) {
      if (IsLive(j)) r.extra.push_back(j.id);  // tidal does not know it: it must not run
      continue;
    }
    by_tidal[*id].push_back(&j);
  }
  for (int64_t id : expected) {
    auto it = by_tidal.find(id);
    if (it == by_tidal.end()) {
      r.lost.push_back(id);
      continue;
    }
    // The live job with the lowest Slurm id is the one; other live ones go.
    const SlurmJob* keep = nullptr;
    for (const SlurmJob* j : it->second)
      if (IsLive(*j) && (keep == nullptr || j->id < keep->id)) keep = j;
    for (const SlurmJob* j : it->second)
      if (IsLive(*j) && j != keep) r.extra.push_back(j->id);
    if (keep == nullptr) {
      // Only ended runs: the newest says how it ended.
      for (const SlurmJob* j : it->second)
        if (keep == nullptr || j->end_time > keep->end_time || (j->end_time == keep->end_time && j->id > keep->id)) keep = j;
    }
    r.found[id] = *keep;
  }
  std::sort(r.extra.begin(), r.extra.end());
  return r;
}

}  // namespace tidal::slurm
