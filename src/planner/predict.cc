#include "planner/predict.h"

namespace tidal::planner {

Result<StepPrediction> PredictStepTime(const TrainingJob& job, const Placement& placement, const Calibration& cal) {
  TIDAL_ASSIGN_OR_RETURN(GpuSpec gpu, FindGpu(job.gpu));
  if (job.strategy) {
    Strategy s = *job.strategy;
    s.precision = job.precision;
    if (s.Gpus() != placement.gpus) {
      return MakeError(ErrorCode::kInvalidArgument, "job strategy uses {} GPUs but the placement has {}", s.Gpus(),
                       placement.gpus);
    }
    ModelSpec m = job.model;
    m.global_batch = s.GlobalBatch();
    TIDAL_ASSIGN_OR_RETURN(Prediction p, Predict(m, gpu, placement, s, cal));
    return StepPrediction{s, p};
  }
  SearchOptions opt;
  opt.top = 1;
  opt.precision = job.precision;
  TIDAL_ASSIGN_OR_RETURN(SearchResult r, SearchPlans(job.model, gpu, placement, opt, cal));
  return StepPrediction{r.plans.front().strategy, r.plans.front().prediction};
}

}  // namespace tidal::planner
