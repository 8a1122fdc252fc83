// Which training job a trace job is. Traces give a job's GPU count and run
// time, not its model or parallel layout; to charge a job for a bad
// placement the simulator needs both. A workload-model file maps GPU-count
// ranges to a planner model preset, precision, batch and the parallel
// strategy the job was launched with (docs/topology.md gives the shipped
// default, data/workload_models/default.yaml, and its rationale). Jobs on a
// single GPU, and GPU counts no range covers, have no model: they run for
// their trace time wherever they land. A class may cover one GPU (`gpus: 1`):
// its jobs have no communication to charge, but their work and MFU are
// modelled (tidal sim org counts them).
//
// `strategy: launched` (the default) runs every job with its class's
// layout; `strategy: planned` lets the planner choose each job's layout for
// the placement it gets (tidal's planner lever): the class fixes the model,
// precision and global batch, the search the rest.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "planner/cost_model.h"
#include "planner/model.h"

namespace tidal::sim {

struct WorkloadClass {
  int min_gpus = 2;
  int max_gpus = 2;  // inclusive
  std::string model;  // planner preset name
  planner::Precision precision = planner::Precision::kBf16;
  int tp = 1;         // launched tensor-parallel size (reduced to a divisor of the GPU count)
  int pp = 1;         // launched pipeline-parallel size (likewise)
  int micro_batch = 1;
  // Sequences per optimizer step; gradient accumulation makes it up on the
  // data-parallel ranks there are (at least one micro-batch each).
  int global_batch = 256;
  int zero_stage = 1;
  planner::Recompute recompute = planner::Recompute::kSelective;
  // Data-parallel gradient reduction overlapped with the backward pass
  // (Megatron's --overlap-grad-reduce); false: it runs after it, exposed.
  bool overlap = true;
  std::string where;  // file:line, for messages
};

class WorkloadModel {
 public:
  static Result<WorkloadModel> Parse(std::string_view yaml, const std::string& source);
  static Result<WorkloadModel> Read(const std::string& path);
  // The shipped default (the same text as data/workload_models/default.yaml).
  static const WorkloadModel& Default();
  static std::string_view DefaultText();

  const std::string& gpu() const { return gpu_; }
  bool planned() const { return planned_; }
  const std::string& source() const { return source_; }
  const std::vector<WorkloadClass>& classes() const { return classes_; }
  // The class covering `gpus`, nullptr if none.
  const WorkloadClass* For(int gpus) const;
  // Index of For(gpus) in classes() (-1 when none).
  int ClassIndex(int gpus) const;
  // The model and strategy a job on `gpus` GPUs runs; nullopt if no class
  // covers it or no divisor layout of the class is valid for the model.
  struct Resolved {
    const WorkloadClass* cls = nullptr;
    planner::ModelSpec model;
    planner::Strategy strategy;
  };
  std::optional<Resolved> Resolve(int gpus) const;

 private:
  std::string source_;
  std::string gpu_ = "h100";
  bool planned_ = false;
  std::vector<WorkloadClass> classes_;
  std::vector<planner::ModelSpec> models_;  // parallel to classes_
};

}  // namespace tidal::sim
