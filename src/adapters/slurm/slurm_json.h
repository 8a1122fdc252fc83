// Slurm's JSON output as tidal reads it: `squeue --json` (jobs) and `sinfo
// --json` (nodes). Written against Slurm 22.05 (openapi v0.0.38: numbers are
// plain, a job's state a string) and accepting the later shapes too
// (v0.0.39+: numbers as {"set", "infinite", "number"}, states as lists).
// Network- and tool-facing: a bad-input table and a fuzz body
// (slurm_json_test.cc). Errors name the source, the element and the field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace tidal::slurm {

struct SlurmJob {
  int64_t id = 0;
  std::string name, comment, partition;
  std::string state;   // PENDING, RUNNING, COMPLETED, ... (the first one listed)
  std::string reason;  // state_reason: JobHeldUser, Resources, None, ...
  std::vector<std::string> nodes;           // allocated, expanded
  std::vector<std::string> required_nodes;  // ReqNodeList, expanded
  int64_t submit_time = 0, start_time = 0, end_time = 0;
  int64_t priority = 0;  // 0 while held
  int32_t node_count = 0;
  int32_t restarts = 0;  // requeues
  int32_t exit_code = 0;
  std::string tres_per_node;  // "gres:gpu:8"
  std::string account, user;  // account, user_name
  int64_t time_limit_min = 0;  // 0: none given (unlimited, or the partition's)
};

struct SlurmNode {
  std::string name;
  std::vector<std::string> state;  // lower case: "idle", "mixed", "allocated", "down", "drain", ...
  int64_t cpus = 0, real_memory_mib = 0;
  int32_t gpus = 0;
  std::string gpu_type;  // "" when untyped
  std::vector<std::string> partitions;
  std::string reason;
  bool drained() const;  // drain or draining flags
};

// Drained, down, failing or not responding: no new work goes there.
bool OutOfService(const SlurmNode& node);

Result<std::vector<SlurmJob>> ParseSqueueJson(std::string_view text, std::string_view source = "squeue --json");
Result<std::vector<SlurmNode>> ParseSinfoJson(std::string_view text, std::string_view source = "sinfo --json");

// A node's GRES string: "gpu:8", "gpu:h100:8", "gpu:h100:8(S:0-1)",
// "gpu:a100:2,gpu:h100:6" (GPUs summed; the type when all share one), ""
// or "(null)" (none). Returns (GPUs, type).
Result<std::pair<int32_t, std::string>> ParseGpuGres(std::string_view gres);
// A job's tres_per_node as a GRES string for ParseGpuGres: "gres:gpu:h100:8"
// (22.05) and "gres/gpu:h100=8" (later) both give "gpu:h100:8".
std::string GresOfTres(std::string_view tres);

}  // namespace tidal::slurm
