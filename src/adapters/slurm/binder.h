// Driving a real Slurm (22.05 and later) through its commands: tidal decides
// when and where, Slurm starts the processes (docs/slurm.md).
//
// Each tidal job is one Slurm batch job, submitted *held* (`sbatch --hold`)
// so that Slurm's own scheduler never places it; it is named
// "<prefix><tidal id>" and carries "--comment=tidal:<tidal id>", so a
// restarted tidal finds its jobs in `squeue --json`. When tidal has chosen
// the nodes: `scontrol update JobId=.. ReqNodeList=.. NumNodes=..`, then
// `scontrol release`. Preemption is `scontrol requeuehold` (the job goes
// back to pending and held, to be placed again). A released job that stays
// pending on its chosen nodes (Slurm saw them busy) is held again and
// replanned. 22.05's slurmrestd (v0.0.38) cannot set required nodes, which
// is why this binder uses the command line.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "adapters/slurm/command.h"
#include "adapters/slurm/slurm_json.h"

namespace tidal::slurm {

struct BindSpec {
  int64_t tidal_id = 0;
  int32_t nodes = 1;          // -N
  int32_t gpus_per_node = 0;  // --gres=gpu[:TYPE]:K
  std::string gpu_type;       // "" = any
  int32_t cpus_per_node = 0;  // --cpus-per-task with one task per node (0: Slurm's default)
  int64_t time_limit_s = 0;   // --time, rounded up to minutes (0: none)
  // The batch script's body after "#!/bin/sh" (e.g. "srun hostname; sleep 60").
  std::string script;
};

struct BinderOptions {
  std::string partition = "tidal";
  std::string name_prefix = "tidal-";
  std::string output = "/dev/null";  // sbatch -o (may hold %j)
  std::string workdir = "/tmp";      // sbatch -D
};

class SlurmBinder {
 public:
  SlurmBinder(CommandRunner& run, BinderOptions options) : run_(run), options_(std::move(options)) {}

  // Submits the job held; returns Slurm's job id.
  Result<int64_t> SubmitHeld(const BindSpec& spec);
  // Pins a held job to `nodes` (tidal's choice) and releases it.
  Status Place(int64_t slurm_id, const std::vector<std::string>& nodes);
  // Holds a pending job again (it did not start on its nodes in time).
  Status Hold(int64_t slurm_id);
  // Preempts a running job: back to pending, held (its next run restarts
  // the script; checkpoints are the job's own).
  Status Requeue(int64_t slurm_id);
  Status Cancel(int64_t slurm_id);
  // A node out of service (no new jobs; running ones go on) and back:
  // `scontrol update NodeName=.. State=DRAIN Reason=..` / `State=RESUME`.
  Status DrainNode(const std::string& node, const std::string& reason);
  Status ResumeNode(const std::string& node);
  // tidal's jobs as Slurm knows them (every state Slurm still reports).
  Result<std::vector<SlurmJob>> Jobs();
  // Users' own jobs waiting for tidal: pending in tidal's partition, held
  // (priority 0, as data/slurm/job_submit.lua holds them) and not tidal's
  // (no comment starting "tidal").
  Result<std::vector<SlurmJob>> Adoptable();
  // Sets a job's comment (`scontrol update JobId=.. Comment=..`): how an
  // adopted job carries its tidal id, or why tidal refused it.
  Status SetComment(int64_t slurm_id, const std::string& comment);
  Result<std::vector<SlurmNode>> Nodes();

  // The tidal id in a job's comment ("tidal:<id>"), if it is one of tidal's.
  static std::optional<int64_t> TidalId(const SlurmJob& job);
  const BinderOptions& options() const { return options_; }

 private:
  // Runs a command that must succeed; the error quotes it and its stderr.
  Result<CommandOutput> Must(const std::vector<std::string>& argv);
  CommandRunner& run_;
  BinderOptions options_;
};

// tidal's jobs against Slurm's after a restart of either side. Slurm jobs
// are matched by the tidal id in their comment, never by Slurm's job id: a
// slurmctld killed before its state save forgets the newest jobs and hands
// their ids out again.
struct Reconciliation {
  std::map<int64_t, SlurmJob> found;  // tidal id -> its Slurm job (a live one if any)
  std::vector<int64_t> lost;          // tidal ids Slurm does not know: submit them again
  std::vector<int64_t> extra;         // Slurm ids to cancel: a second live job of one tidal id, or one tidal does not know
};
// `expected`: the tidal ids tidal has handed to Slurm and not seen end.
Reconciliation ReconcileJobs(const std::set<int64_t>& expected, const std::vector<SlurmJob>& jobs);
bool IsLive(const SlurmJob& job);  // pending, running, completing, suspended, ...

// Jobs tidal released (`released_at`: Slurm id -> when) that are still
// pending `timeout_s` later: Slurm found their nodes busy (tidal's view was
// stale). The caller holds them again and replans.
std::vector<int64_t> StuckPending(const std::vector<SlurmJob>& jobs, const std::map<int64_t, int64_t>& released_at, int64_t now,
                                  int64_t timeout_s);

}  // namespace tidal::slurm
