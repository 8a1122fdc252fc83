// The scheduler's seam: how fast would this training job run on this
// placement? Inputs are plain structs (model, GPU name, precision, optional
// fixed strategy; GPUs per NVLink domain, nodes, bandwidth/latency per level),
// so the scheduler and simulator can call it without the planner knowing
// about cluster/ or topology/.
#pragma once

#include <optional>
#include <string>

#include "planner/calibration.h"
#include "planner/search.h"

namespace tidal::planner {

struct TrainingJob {
  ModelSpec model;
  std::string gpu;  // a GpuSpec name or table spelling ("h100", "H100-SXM-80GB")
  Precision precision = Precision::kBf16;
  // As launched; when absent, the best plan the search finds on the placement.
  std::optional<Strategy> strategy;
};

struct StepPrediction {
  Strategy strategy;
  Prediction prediction;
};

// Placement.gpus must equal the job's GPU count when a strategy is given.
Result<StepPrediction> PredictStepTime(const TrainingJob& job, const Placement& placement,
                                       const Calibration& cal = DefaultCalibration());

}  // namespace tidal::planner
