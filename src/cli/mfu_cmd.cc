// `tidal mfu`: MFU and communication share of a job from its training log
// and/or DCGM-exporter scrapes; every figure says which step produced it.
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "telemetry/mfu.h"

namespace tidal::cli {
namespace {

using namespace tidal::telemetry;

struct MfuArgs {
  std::string log;
  std::vector<std::string> dcgm;
  std::string model;
  std::string gpu;
  std::string precision;
  int gpus = 0;
  int tp = 0, pp = 0, cp = 1, micro_batch = 1, global_batch = 0, seq_len = 0;
  std::string recompute = "none";
  double decay = 0.9;
  bool json = false;
};

int Fail(const std::string& what) {
  fmt::print(stderr, "tidal mfu: {}\n", what);
  return 2;
}

int Run(const MfuArgs& a) {
  MfuInputs in;
  in.decay = a.decay;
  std::optional<MegatronLog> log;
  if (!a.log.empty()) {
    auto l = ReadMegatronLog(a.log);
    if (!l) return Fail(l.error().message);
    log = std::move(*l);
    in.log = &*log;
  }
  for (const auto& f : a.dcgm) {
    auto d = ReadDcgmFile(f);
    if (!d) return Fail(d.error().message);
    in.dcgm.insert(in.dcgm.end(), d->begin(), d->end());
  }
  if (!a.model.empty()) {
    auto m = std::filesystem::exists(a.model) ? planner::LoadModelFile(a.model) : planner::FindModelPreset(a.model);
    if (!m) return Fail(m.error().message);
    in.model = *m;
    if (a.global_batch > 0) in.model->global_batch = a.global_batch;
    if (a.seq_len > 0) in.model->seq_len = a.seq_len;
  }
  if (!a.gpu.empty()) {
    auto g = planner::FindGpu(a.gpu);
    if (!g) return Fail(g.error().message);
    in.gpu = *g;
  }
  if (!a.precision.empty()) {
    auto p = planner::ParsePrecision(a.precision);
    if (!p) return Fail(p.error().message);
    in.precision = *p;
  }
  in.gpus = a.gpus;
  const int gpus = a.gpus > 0 ? a.gpus : (log && log->world_size ? *log->world_size : 0);
  if (a.tp > 0 && a.pp > 0) {
    if (gpus <= 0) return Fail("--tp/--pp need --gpus (the log has no world size)");
    planner::Strategy s;
    s.tp = a.tp;
    s.pp = a.pp;
    s.cp = a.cp;
    if (a.cp <= 0 || a.micro_batch <= 0 || gpus % (a.tp * a.pp * a.cp) != 0) {
      return Fail(fmt::format("{} GPUs is not a multiple of tp*pp*cp = {}", gpus, a.tp * a.pp * a.cp));
    }
    s.dp = gpus / (a.tp * a.pp * a.cp);
    s.micro_batch = a.micro_batch;
    const int gbs = a.global_batch > 0 ? a.global_batch : (in.model ? in.model->global_batch : 0);
    if (gbs <= 0 || gbs % (s.micro_batch * s.dp) != 0) {
      return Fail(fmt::format("--global-batch {} must be a positive multiple of micro-batch x dp = {}", gbs,
                              s.micro_batch * s.dp));
    }
    s.grad_accum = gbs / (s.micro_batch * s.dp);
    auto rc = planner::ParseRecompute(a.recompute);
    if (!rc) return Fail(rc.error().message);
    s.recompute = *rc;
    s.sequence_parallel = s.tp > 1;
    in.strategy = s;
  }
  auto rep = EstimateMfu(in);
  if (!rep) return Fail(rep.error().message);
  const MfuReport& r = *rep;
  auto fig = [](const std::optional<Figure>& f) -> nlohmann::json {
    if (!f) return nullptr;
    return {{"value", f->value}, {"method", f->method}};
  };
  if (a.json) {
    nlohmann::json j = {{"model", r.model_name},
                        {"gpu", r.gpu_name},
                        {"step_time_s", fig(r.step_time_s)},
                        {"tflops_per_gpu", fig(r.tflops_per_gpu)},
                        {"mfu", fig(r.mfu)},
                        {"comm_share", fig(r.comm_share)},
                        {"logged_tflops_per_gpu", fig(r.logged_tflops_per_gpu)},
                        {"tensor_active", fig(r.tensor_active)},
                        {"sm_active", fig(r.sm_active)},
                        {"nvlink_bytes_per_s", fig(r.nvlink_bytes_per_s)},
                        {"pcie_bytes_per_s", fig(r.pcie_bytes_per_s)},
                        {"notes", r.notes}};
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  auto line = [](std::string_view name, const std::optional<Figure>& f, std::string_view unit, double scale) {
    if (!f) {
      fmt::print("{:<22} -\n", name);
      return;
    }
    fmt::print("{:<22} {:>12.4g} {:<6} [{}]\n", name, f->value * scale, unit, f->method);
  };
  if (!r.model_name.empty() || !r.gpu_name.empty()) {
    fmt::print("model: {}  gpu: {}\n", r.model_name.empty() ? "?" : r.model_name,
               r.gpu_name.empty() ? "?" : r.gpu_name);
  }
  line("step time", r.step_time_s, "s", 1);
  line("TFLOP/s per GPU", r.tflops_per_gpu, "", 1);
  line("MFU", r.mfu, "%", 100);
  line("communication share", r.comm_share, "%", 100);
  line("logged TFLOP/s/GPU", r.logged_tflops_per_gpu, "", 1);
  line("tensor active", r.tensor_active, "", 1);
  line("SM active", r.sm_active, "", 1);
  line("NVLink bytes/s", r.nvlink_bytes_per_s, "B/s", 1);
  line("PCIe bytes/s", r.pcie_bytes_per_s, "B/s", 1);
  for (const auto& n : r.notes) fmt::print("note: {}\n", n);
  return 0;
}

}  // namespace

void RegisterMfuCommand(CLI::App& app) {
  auto a = std::make_shared<MfuArgs>();
  auto* cmd = app.add_subcommand("mfu", "MFU and communication share from a training log and/or DCGM scrapes");
  cmd->add_option("--log", a->log, "Megatron-LM / NeMo / Megatron-DeepSpeed training log");
  cmd->add_option("--dcgm", a->dcgm, "DCGM-exporter scrape(s), Prometheus text")->expected(1, -1);
  cmd->add_option("--model", a->model, "preset or YAML/JSON model file (default: from the log's arguments)");
  cmd->add_option("--gpu", a->gpu, "a100, h100, h200, b200, gb200 (default: DCGM modelName)");
  cmd->add_option("--gpus", a->gpus, "GPU count (default: the log's world size)");
  cmd->add_option("--precision", a->precision, "bf16, fp16, fp8, fp8-cs, mxfp8 or nvfp4 (default: from the log, else bf16)");
  cmd->add_option("--tp", a->tp, "layout when the log has none: tensor parallel size");
  cmd->add_option("--pp", a->pp, "pipeline parallel size");
  cmd->add_option("--cp", a->cp, "context parallel size");
  cmd->add_option("--micro-batch", a->micro_batch, "micro-batch size");
  cmd->add_option("--global-batch", a->global_batch, "global batch (sequences)");
  cmd->add_option("--seq-len", a->seq_len, "sequence length of the run (default: the model's)");
  cmd->add_option("--recompute", a->recompute, "none, selective or full");
  cmd->add_option("--decay", a->decay, "parallel-efficiency decay per interconnect level (>= 0.85), last fallback");
  cmd->add_flag("--json", a->json, "machine-readable output");
  cmd->callback([a] { SetExitCode(Run(*a)); });
}

}  // namespace tidal::cli
