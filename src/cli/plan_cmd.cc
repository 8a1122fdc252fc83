// `tidal plan`: choose a parallel strategy for a model on a GPU count, or
// validate the performance model against a CSV of published runs.
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "planner/calibration.h"
#include "planner/emit.h"
#include "planner/search.h"

namespace tidal::cli {
namespace {

using namespace tidal::planner;

struct PlanArgs {
  std::vector<std::string> validate;
  std::string split = "all";
  std::string split_file;
  std::string recipe_file;
  std::string cuda_graphs = "none";
  bool fp8_attention = false;
  bool fused_expert_mlp = false;
  bool explain = false;
  bool json = false;
  std::string model;
  int gpus = 0;
  std::string gpu = "h100";
  std::string cluster;
  int top = 5;
  std::string precision = "bf16";
  int global_batch = 0;
  int seq_len = 0;
  double allreduce_saturation = 0;
  double target_comm_share = 0.05;
};

int Fail(const std::string& what) {
  fmt::print(stderr, "tidal plan: {}\n", what);
  return 2;
}

// A shipped data file, from the repository root or next to a binary built
// in it (build/tidal); empty when neither has it.
std::string FindDataFile(const char* relative) {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::vector<std::filesystem::path> candidates = {relative};
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / relative);
  for (const auto& c : candidates) {
    if (std::filesystem::exists(c)) return c.string();
  }
  return {};
}

int RunValidate(const PlanArgs& a) {
  // Which rows calibrate is data: the split file (data/planner/split.csv by
  // default, when run from the repository root) or a `split` column.
  std::vector<SplitRule> rules;
  std::string split_file = a.split_file.empty() ? FindDataFile(kDefaultSplitFile) : a.split_file;
  // What each published benchmark's recipe set (CUDA graphs, FP8 attention,
  // ...) is data too: data/planner/recipes.csv.
  std::vector<RecipeRule> recipes;
  const std::string recipe_file = a.recipe_file.empty() ? FindDataFile(kDefaultRecipeFile) : a.recipe_file;
  if (!recipe_file.empty() && a.recipe_file != "none") {
    auto r = LoadRecipeRules(recipe_file);
    if (!r) {
      return Fail(r.error().message + "; a recipe file has the columns file,model,container,system,precision,"
                  "cuda_graphs,fp8_attention,ep_overlap,dispatcher,fused_grouped_mlp,source");
    }
    recipes = std::move(*r);
  } else if (recipe_file.empty()) {
    fmt::print(stderr, "tidal plan: no recipe file ({} not found from here; give --recipe-file): every row is "
               "predicted with the framework defaults\n", kDefaultRecipeFile);
  }
  if (!split_file.empty()) {
    auto r = LoadSplitRules(split_file);
    if (!r) return Fail(r.error().message + "; a split file has the columns file,source,model,notes,split");
    rules = std::move(*r);
  } else if (a.split != "all") {
    fmt::print(stderr, "tidal plan: no split file ({} not found from here; give --split-file): every row without a "
               "split column counts as validation\n", kDefaultSplitFile);
  }
  std::vector<CalibrationCase> cases;
  for (const auto& file : a.validate) {
    auto c = LoadCalibrationCases(file, rules, recipes);
    if (!c) return Fail(c.error().message + "; check the file has the calibration.csv columns");
    cases.insert(cases.end(), std::make_move_iterator(c->begin()), std::make_move_iterator(c->end()));
  }
  std::optional<Split> only;
  if (a.split != "all") {
    auto sp = ParseSplit(a.split);
    if (!sp) return Fail(fmt::format("--split '{}': use all, calibration or validation", a.split));
    only = *sp;
  }
  const ValidationReport rep = Validate(cases, DefaultCalibration(), only);
  if (rep.rows_used + rep.rows_skipped == 0) {
    return Fail(fmt::format("no {} rows in {}: check the split file ({}) names this file's sources", a.split,
                            fmt::join(a.validate, ", "), split_file.empty() ? "none found" : split_file));
  }
  const bool many = a.validate.size() > 1;
  auto where = [&](const std::string& file, int line) {
    return many ? fmt::format("{}:{}", std::filesystem::path(file).filename().string(), line) : std::to_string(line);
  };
  if (a.json) {
    nlohmann::json j;
    j["rows"] = nlohmann::json::array();
    for (const auto& r : rep.rows) {
      j["rows"].push_back({{"file", r.file},
                           {"line", r.line},
                           {"model", r.model},
                           {"gpus", r.gpus},
                           {"gpu_type", r.gpu_type},
                           {"generation", r.generation},
                           {"precision", r.precision},
                           {"family", r.family},
                           {"split", std::string(SplitName(r.split))},
                           {"convention", r.convention},
                           {"layout", r.layout},
                           {"assumptions", r.assumptions},
                           {"predicted_tflops", r.predicted_tflops},
                           {"measured_tflops", r.measured_tflops},
                           {"error_pct", r.error_pct}});
    }
    j["skipped"] = nlohmann::json::array();
    for (const auto& s : rep.skipped) {
      j["skipped"].push_back({{"file", s.file}, {"line", s.line}, {"model", s.model}, {"reason", s.reason}});
    }
    j["groups"] = nlohmann::json::object();
    for (const auto& [key, st] : rep.groups) {
      j["groups"][key] = {{"rows", st.rows},
                          {"median_abs_error_pct", st.median_abs_error_pct},
                          {"p90_abs_error_pct", st.p90_abs_error_pct},
                          {"max_abs_error_pct", st.max_abs_error_pct}};
    }
    j["summary"] = {{"median_abs_error_pct", rep.median_abs_error_pct},
                    {"p90_abs_error_pct", rep.p90_abs_error_pct},
                    {"max_abs_error_pct", rep.max_abs_error_pct},
                    {"rows_used", rep.rows_used},
                    {"rows_skipped", rep.rows_skipped}};
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("{:>7}  {:<32} {:>6}  {:<16} {:<12} {:<7} {:<15} {:>9} {:>9} {:>8}\n", "line", "model", "gpus",
             "gpu_type", "split", "prec", "convention", "predicted", "measured", "error%");
  for (const auto& r : rep.rows) {
    fmt::print("{:>7}  {:<32} {:>6}  {:<16} {:<12} {:<7} {:<15} {:>9.1f} {:>9.1f} {:>+8.1f}\n", where(r.file, r.line),
               r.model.substr(0, 32), r.gpus, r.gpu_type.substr(0, 16), SplitName(r.split), r.precision, r.convention,
               r.predicted_tflops, r.measured_tflops, r.error_pct);
    if (a.explain) {
      fmt::print("       as {}\n", r.layout);
      for (const auto& x : r.assumptions) fmt::print("       assumed: {}\n", x);
    }
  }
  if (!rep.skipped.empty()) {
    fmt::print("\nskipped rows:\n");
    for (const auto& s : rep.skipped) {
      fmt::print("{:>7}  {:<32} {}\n", where(s.file, s.line), s.model.substr(0, 32), s.reason);
    }
  }
  fmt::print("\n{:<40} {:>5} {:>9} {:>9} {:>9}\n", "split/generation/precision/family", "rows", "median%", "p90%",
             "max%");
  for (const auto& [key, st] : rep.groups) {
    fmt::print("{:<40} {:>5} {:>9.1f} {:>9.1f} {:>9.1f}\n", key, st.rows, st.median_abs_error_pct,
               st.p90_abs_error_pct, st.max_abs_error_pct);
  }
  fmt::print("\nTFLOP/s per GPU: median |error| {:.1f}%, p90 {:.1f}%, max {:.1f}%, rows used {}, skipped {}\n",
             rep.median_abs_error_pct, rep.p90_abs_error_pct, rep.max_abs_error_pct, rep.rows_used, rep.rows_skipped);
  return 0;
}

nlohmann::json PlanJson(const Plan& p) {
  const Strategy& s = p.strategy;
  const Prediction& r = p.prediction;
  return {{"tp", s.tp},
          {"pp", s.pp},
          {"dp", s.dp},
          {"cp", s.cp},
          {"ep", s.ep},
          {"vpp", s.vpp},
          {"micro_batch", s.micro_batch},
          {"grad_accum", s.grad_accum},
          {"zero_stage", s.zero_stage},
          {"recompute", std::string(RecomputeName(s.recompute))},
          {"sequence_parallel", s.sequence_parallel},
          {"cuda_graphs", std::string(CudaGraphsName(s.cuda_graphs))},
          {"fp8_attention", s.fp8_attention},
          {"fused_expert_mlp", s.fused_expert_mlp},
          {"step_time_s", r.step_time_s},
          {"tokens_per_s", r.tokens_per_s},
          {"tflops_per_gpu", r.tflops_per_gpu},
          {"mfu", r.mfu},
          {"hfu", r.hfu},
          {"memory_gib", r.memory_gib},
          {"comm_share", r.comm_share},
          {"breakdown_s",
           {{"compute", r.time.compute_s},
            {"recompute", r.time.recompute_s},
            {"bubble", r.time.bubble_s},
            {"tp_comm", r.time.tp_comm_s},
            {"cp_comm", r.time.cp_comm_s},
            {"ep_comm", r.time.ep_comm_s},
            {"pp_comm", r.time.pp_comm_s},
            {"dp_comm", r.time.dp_comm_s},
            {"optimizer", r.time.optimizer_s}}}};
}

int RunPlan(const PlanArgs& a) {
  if (a.model.empty()) return Fail("--model is required (a preset name or a YAML/JSON model file), or use --validate FILE");
  if (a.gpus <= 0) return Fail("--gpus must be a positive GPU count");
  Result<ModelSpec> model = std::filesystem::exists(a.model) ? LoadModelFile(a.model) : FindModelPreset(a.model);
  if (!model) return Fail(model.error().message);
  if (a.seq_len > 0) model->seq_len = a.seq_len;
  auto gpu = FindGpu(a.gpu);
  if (!gpu) return Fail(gpu.error().message);
  auto prec = ParsePrecision(a.precision);
  if (!prec) return Fail(prec.error().message);
  Result<Placement> pl = a.cluster.empty() ? Result<Placement>(DefaultPlacement(*gpu, a.gpus))
                                           : ParseClusterSpec(a.cluster, *gpu, a.gpus);
  if (!pl) return Fail(pl.error().message);
  SearchOptions opt;
  opt.top = a.top;
  opt.precision = *prec;
  auto graphs = ParseCudaGraphs(a.cuda_graphs);
  if (!graphs) return Fail("--cuda-graphs: " + graphs.error().message);
  opt.cuda_graphs = *graphs;
  opt.fp8_attention = a.fp8_attention;
  opt.fused_expert_mlp = a.fused_expert_mlp;
  opt.global_batch = a.global_batch;
  const Calibration cal = DefaultCalibration();
  auto res = SearchPlans(*model, *gpu, *pl, opt, cal);
  if (!res) return Fail(res.error().message);
  ModelSpec m = *model;
  if (a.global_batch > 0) m.global_batch = a.global_batch;
  const Plan& best = res->plans.front();

  std::optional<GradAccumChoice> ga;
  if (a.allreduce_saturation > 0) {
    auto g = ChooseGradAccum(m, *gpu, *pl, best.strategy, cal, a.allreduce_saturation, a.target_comm_share);
    if (!g) return Fail(g.error().message);
    ga = *g;
  }

  if (a.json) {
    nlohmann::json j;
    j["model"] = m.name;
    j["gpus"] = a.gpus;
    j["gpu"] = gpu->name;
    j["precision"] = std::string(PrecisionName(*prec));
    j["global_batch"] = m.global_batch;
    j["seq_len"] = m.seq_len;
    j["evaluated"] = res->evaluated;
    j["pruned_memory"] = res->pruned_memory;
    j["plans"] = nlohmann::json::array();
    for (const auto& p : res->plans) j["plans"].push_back(PlanJson(p));
    j["megatron_args"] = MegatronArgs(m, best.strategy);
    j["deepspeed_config"] = DeepSpeedConfig(m, best.strategy);
    if (ga) {
      j["grad_accum_from_saturation"] = {{"allreduce_saturation", a.allreduce_saturation},
                                         {"target_comm_share", a.target_comm_share},
                                         {"grad_accum", ga->grad_accum},
                                         {"global_batch", ga->global_batch},
                                         {"dp_comm_share", ga->dp_share},
                                         {"met", ga->met}};
    }
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("{} on {} x {} ({}), global batch {} x seq {}: {} strategies evaluated, {} over memory\n", m.name,
             a.gpus, gpu->name, PrecisionName(*prec), m.global_batch, m.seq_len, res->evaluated, res->pruned_memory);
  if (const Strategy& bs = best.strategy; bs.cuda_graphs != CudaGraphs::kNone || bs.fp8_attention || bs.fused_expert_mlp) {
    fmt::print("recipe: CUDA graphs {}{}{}\n", CudaGraphsName(bs.cuda_graphs), bs.fp8_attention ? ", FP8 attention" : "",
               bs.fused_expert_mlp ? ", fused expert MLP" : "");
  }
  fmt::print("\n");
  fmt::print("{:>4} {:>3} {:>3} {:>5} {:>3} {:>3} {:>3} {:>3} {:>5} {:>4} {:<9} {:>8} {:>8} {:>6} {:>6} {:>7} {:>6}\n",
             "rank", "tp", "pp", "dp", "cp", "ep", "vpp", "mb", "ga", "zero", "recompute", "step_s", "TFLOP/s",
             "MFU%", "HFU%", "mem_GiB", "comm%");
  int rank = 1;
  for (const auto& p : res->plans) {
    const Strategy& s = p.strategy;
    const Prediction& r = p.prediction;
    fmt::print("{:>4} {:>3} {:>3} {:>5} {:>3} {:>3} {:>3} {:>3} {:>5} {:>4} {:<9} {:>8.3f} {:>8.1f} {:>6.1f} {:>6.1f} "
               "{:>7.1f} {:>6.1f}\n",
               rank++, s.tp, s.pp, s.dp, s.cp, s.ep, s.vpp, s.micro_batch, s.grad_accum, s.zero_stage,
               RecomputeName(s.recompute), r.step_time_s, r.tflops_per_gpu, r.mfu * 100, r.hfu * 100, r.memory_gib,
               r.comm_share * 100);
  }
  const auto& t = best.prediction.time;
  fmt::print("\nbest plan, time per step (s): compute {:.3f} (recompute {:.3f}), bubble {:.3f}, exposed comm: "
             "tp {:.3f} cp {:.3f} ep {:.3f} pp {:.3f} dp {:.3f} (of {:.3f}), optimizer {:.3f}\n",
             t.compute_s, t.recompute_s, t.bubble_s, t.tp_comm_s, t.cp_comm_s, t.ep_comm_s, t.pp_comm_s, t.dp_comm_s,
             t.dp_comm_total_s, t.optimizer_s);
  const auto& mm = best.prediction.memory;
  fmt::print("memory per GPU (GiB): weights {:.1f}, gradients {:.1f}, optimizer {:.1f}, activations {:.1f}, buffers "
             "{:.1f}\n",
             mm.weights_gib, mm.gradients_gib, mm.optimizer_gib, mm.activations_gib, mm.buffers_gib);
  if (ga) {
    fmt::print("\ngradient accumulation at all-reduce saturation {:.2f}: {} micro-batches (global batch {}) -> "
               "exposed DP communication {:.1f}% of the step{}\n",
               a.allreduce_saturation, ga->grad_accum, ga->global_batch, ga->dp_share * 100,
               ga->met ? "" : fmt::format(" (target {:.1f}% not reachable)", a.target_comm_share * 100));
  }
  fmt::print("\nMegatron-LM arguments:\n  {}\n", MegatronArgsLine(m, best.strategy));
  fmt::print("\nDeepSpeed config:\n{}\n", DeepSpeedConfig(m, best.strategy).dump(2));
  return 0;
}

}  // namespace

void RegisterPlanCommand(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  auto* cmd = app.add_subcommand("plan", "Choose a parallel strategy, or validate the performance model");
  cmd->add_option("--validate", a->validate,
                  "CSVs of measured runs (calibration.csv layout): predicted vs measured")
      ->expected(1, -1);
  cmd->add_option("--split", a->split, "with --validate: all, calibration or validation rows");
  cmd->add_option("--split-file", a->split_file,
                  "with --validate: which rows calibrate (default data/planner/split.csv)");
  cmd->add_option("--recipe-file", a->recipe_file,
                  "with --validate: the knobs each published run's recipe set (default data/planner/recipes.csv; "
                  "'none' for framework defaults)");
  cmd->add_flag("--explain", a->explain, "with --validate: each row's layout and the defaults assumed for it");
  cmd->add_flag("--json", a->json, "machine-readable output");
  cmd->add_option("--model", a->model, "preset name (llama3-70b, gpt3-175b, ...) or a YAML/JSON model file");
  cmd->add_option("--gpus", a->gpus, "GPU count");
  cmd->add_option("--gpu", a->gpu, "a100, h100, h200, b200, gb200, b300 or gb300");
  cmd->add_option("--cluster", a->cluster,
                  "interconnect: key=value list (domain, nvlink, net, latency, leaf, spine_latency, nodes) or a YAML file");
  cmd->add_option("--top", a->top, "plans to show");
  cmd->add_option("--precision", a->precision, "bf16, fp16, fp8 (delayed scaling), fp8-cs, mxfp8 or nvfp4");
  cmd->add_option("--cuda-graphs", a->cuda_graphs,
                  "what the recipe captures: none, partial (modules, e.g. attention and the MoE router) or full "
                  "(the whole iteration)");
  cmd->add_flag("--fp8-attention", a->fp8_attention,
                "the recipe runs attention in FP8 (Transformer Engine fp8_dot_product_attention; not a Megatron-LM "
                "argument, so not emitted)");
  cmd->add_flag("--fused-expert-mlp", a->fused_expert_mlp,
                "the recipe fuses the expert MLP (Transformer Engine op fuser, CuTeDSL grouped MLP; MoE models)");
  cmd->add_option("--global-batch", a->global_batch, "sequences per step (default: the model's)");
  cmd->add_option("--seq-len", a->seq_len, "sequence length (default: the model's)");
  cmd->add_option("--allreduce-saturation", a->allreduce_saturation,
                  "measured all-reduce bus bandwidth / link peak: choose gradient accumulation from it");
  cmd->add_option("--target-comm-share", a->target_comm_share,
                  "with --allreduce-saturation: largest exposed DP communication share (default 0.05)");
  cmd->callback([a] { SetExitCode(a->validate.empty() ? RunPlan(*a) : RunValidate(*a)); });
}

}  // namespace tidal::cli
