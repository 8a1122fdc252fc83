// Megatron-LM family training-log parser (Megatron-LM 2019-2025, Megatron-
// Core, Megatron-DeepSpeed/BigScience, NeMo 1 progress bars, NeMo 2).
//
// Accepts the formats as they occur in real logs: any prefix before
// "iteration" (timestamps, "[default7]:" torchrun tags), "key: value" and the
// 2019 "key value" fields, elapsed time in ms or s, the `arguments` block
// (also in fragments), the "using world size" line and `time (ms) | ...`
// timer lines. Unknown fields are ignored; a known field with a value that is
// not a number is an error naming file:line and the field.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace tidal::telemetry {

struct IterationRecord {
  int line = 0;
  long iteration = 0;
  std::optional<double> elapsed_s;        // per iteration
  std::optional<double> tflops_per_gpu;   // as the framework printed it
  std::optional<long> global_batch;
  std::optional<double> samples_per_s;
  std::optional<double> tokens_per_gpu_per_s;
};

// One `time (ms) | name: value | ...` line; names as printed.
struct TimerRecord {
  int line = 0;
  std::map<std::string, double> ms;
};

struct MegatronLog {
  std::string source;
  std::vector<IterationRecord> iterations;
  std::vector<TimerRecord> timers;
  std::map<std::string, std::string> arguments;  // dest name -> value as printed
  std::optional<int> world_size, data_parallel, tensor_parallel, pipeline_parallel, context_parallel;

  // Argument as int/double/bool when present and readable.
  std::optional<long> ArgInt(const std::string& name) const;
  std::optional<double> ArgDouble(const std::string& name) const;
  std::optional<bool> ArgBool(const std::string& name) const;
};

Result<MegatronLog> ParseMegatronLog(std::string_view text, const std::string& source);
Result<MegatronLog> ReadMegatronLog(const std::string& path);

}  // namespace tidal::telemetry
