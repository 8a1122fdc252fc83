// DCGM-exporter scrape parser (Prometheus text exposition format).
//
// Real scrapes differ: the host label is `Hostname` (before dcgm-exporter
// #655) or `hostname`; relabelled pipelines lower-case metric names; MIG
// instances add GPU_I_PROFILE/GPU_I_ID; documentation samples contain "..."
// elision lines. DCGM's blank sentinels (INT64 0x7ffffffffffffff0..3, INT32
// 0x7ffffff0..3, FP64 1.40737488355328e14..+3) and NaN mean "no value" and
// are reported as missing, never as numbers.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace tidal::telemetry {

struct DcgmSample {
  int line = 0;
  std::string metric;  // canonical upper case: DCGM_FI_PROF_PIPE_TENSOR_ACTIVE
  std::map<std::string, std::string> labels;
  std::optional<double> value;  // nullopt: DCGM blank / not supported

  std::string Host() const;    // Hostname or hostname label, "" if none
  std::string GpuKey() const;  // host/gpu[/mig instance], identifies one device
};

bool IsDcgmBlank(double v);

Result<std::vector<DcgmSample>> ParseDcgmText(std::string_view text, const std::string& source);
Result<std::vector<DcgmSample>> ReadDcgmFile(const std::string& path);

// Mean of a metric over devices that report a value; nullopt when none do.
struct MetricSummary {
  double mean = 0;
  int devices = 0;
  int missing = 0;  // samples with a blank value
};
std::optional<MetricSummary> Summarize(const std::vector<DcgmSample>& samples, const std::string& metric);

}  // namespace tidal::telemetry
