// Running the cluster manager's commands (sbatch, scontrol, squeue, sinfo,
// scancel) as child processes: argv only, never a shell, with a time limit
// and the output captured. Behind an interface so the binder's logic can be
// tested on canned output as well as against a real Slurm.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace tidal::slurm {

struct CommandOutput {
  int exit_code = 0;  // the process's exit status; 128+N when killed by signal N
  std::string out, err;
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv[0] (looked up in PATH) with the rest as arguments. An error
  // only when it could not be run or ran past the limit; a non-zero exit is
  // a result.
  virtual Result<CommandOutput> Run(const std::vector<std::string>& argv) = 0;
};

class ProcessRunner : public CommandRunner {
 public:
  // `env`: variables set for the child on top of this process's own (e.g.
  // SLURM_CONF).
  explicit ProcessRunner(std::map<std::string, std::string> env = {}, std::chrono::milliseconds timeout = std::chrono::seconds(30))
      : env_(std::move(env)), timeout_(timeout) {}
  Result<CommandOutput> Run(const std::vector<std::string>& argv) override;

 private:
  std::map<std::string, std::string> env_;
  std::chrono::milliseconds timeout_;
};

// "sbatch --hold ..." for messages (arguments with spaces quoted).
std::string CommandLine(const std::vector<std::string>& argv);

}  // namespace tidal::slurm
