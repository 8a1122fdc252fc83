// MFU and communication share of a running or finished job, from a training
// log and/or DCGM-exporter scrapes, with the planner's model filling gaps.
//
// Every figure carries the method that produced it, because the same number
// means different things when measured, derived or modelled:
//   step time    log (median over iterations, first one dropped as warm-up)
//   TFLOP/s/GPU  model FLOPs (Megatron formula, DESIGN.md) / step time, else
//                the log's own throughput field, else DCGM tensor-pipe
//                activity x dense peak (an HFU-like upper bound)
//   comm share   log communication timers, else DCGM NVLink TX counters for a
//                job inside one NVLink domain, else the fallback chain:
//                (1) step time - pure compute time (log compute timers or
//                    the planner's compute model),
//                (2) hops x per-hop latency + bytes / bandwidth (the
//                    planner's collective model for the layout),
//                (3) a parallel-efficiency decay coefficient c >= 0.85 per
//                    interconnect level spanned: share = 1 - c^levels.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "planner/calibration.h"
#include "telemetry/dcgm.h"
#include "telemetry/megatron_log.h"

namespace tidal::telemetry {

struct Figure {
  double value = 0;
  std::string method;
};

struct MfuInputs {
  std::optional<planner::ModelSpec> model;     // else built from the log's arguments
  std::optional<planner::GpuSpec> gpu;         // else from DCGM modelName
  std::optional<planner::Precision> precision; // else from the log's arguments, else bf16
  int gpus = 0;                                // else the log's world size
  std::optional<planner::Strategy> strategy;   // else from the log's arguments
  const MegatronLog* log = nullptr;
  std::vector<DcgmSample> dcgm;
  std::optional<planner::Placement> placement;  // else the GPU's default
  double decay = 0.9;
  planner::Calibration calibration = planner::DefaultCalibration();
};

struct MfuReport {
  std::optional<Figure> step_time_s;
  std::optional<Figure> tflops_per_gpu;
  std::optional<Figure> mfu;
  std::optional<Figure> comm_share;
  std::optional<Figure> logged_tflops_per_gpu;  // as the framework printed it
  std::optional<Figure> tensor_active;
  std::optional<Figure> sm_active;
  std::optional<Figure> nvlink_bytes_per_s;
  std::optional<Figure> pcie_bytes_per_s;
  std::string model_name, gpu_name;
  std::vector<std::string> notes;  // why a figure is missing or approximate
};

Result<MfuReport> EstimateMfu(const MfuInputs& in);

// Model and layout from a log's `arguments` block (nullopt when absent).
std::optional<planner::ModelSpec> ModelFromLog(const MegatronLog& log);
std::optional<planner::Strategy> StrategyFromLog(const MegatronLog& log, int gpus);

}  // namespace tidal::telemetry
