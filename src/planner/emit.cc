#include "planner/emit.h"

#include <fmt/format.h>

namespace tidal::planner {

std::vector<std::string> MegatronArgs(const ModelSpec& m, const Strategy& s) {
  std::vector<std::string> a;
  auto kv = [&](std::string flag, auto value) {
    a.push_back(std::move(flag));
    a.push_back(fmt::format("{}", value));
  };
  kv("--tensor-model-parallel-size", s.tp);
  kv("--pipeline-model-parallel-size", s.pp);
  kv("--context-parallel-size", s.cp);
  if (m.IsMoe()) kv("--expert-model-parallel-size", s.ep);
  if (s.vpp > 1 && s.first_stage_layers > 0) {
    // An uneven split has no single layer count per virtual stage.
    kv("--num-virtual-stages-per-pipeline-rank", s.vpp);
  } else if (s.vpp > 1) {
    kv("--num-layers-per-virtual-pipeline-stage", m.layers / s.pp / s.vpp);
  }
  if (s.first_stage_layers > 0) {
    kv("--decoder-first-pipeline-num-layers", s.first_stage_layers);
    kv("--decoder-last-pipeline-num-layers", s.last_stage_layers);
  }
  kv("--micro-batch-size", s.micro_batch);
  kv("--global-batch-size", s.GlobalBatch());
  kv("--num-layers", m.layers);
  kv("--hidden-size", m.hidden);
  kv("--num-attention-heads", m.heads);
  if (m.kv_heads != m.heads) {
    a.push_back("--group-query-attention");
    kv("--num-query-groups", m.kv_heads);
  }
  if (m.IsMla()) {
    a.push_back("--multi-latent-attention");
    if (m.q_lora_rank > 0) kv("--q-lora-rank", m.q_lora_rank);
    kv("--kv-lora-rank", m.kv_lora_rank);
    kv("--qk-head-dim", m.head_dim);
    kv("--qk-pos-emb-head-dim", m.rope_head_dim);
    kv("--v-head-dim", m.v_head_dim);
  } else if (m.head_dim > 0) {
    kv("--kv-channels", m.head_dim);
  }
  if (m.ffn > 0) kv("--ffn-hidden-size", m.ffn);
  if (m.gated_mlp) a.push_back("--swiglu");
  kv("--seq-length", m.seq_len);
  kv("--max-position-embeddings", m.seq_len);
  if (!m.tied_embeddings) a.push_back("--untie-embeddings-and-output-weights");
  if (m.IsMoe()) {
    kv("--num-experts", m.experts);
    kv("--moe-router-topk", m.top_k);
    kv("--moe-ffn-hidden-size", m.expert_ffn);
    if (m.shared_experts > 0) kv("--moe-shared-expert-intermediate-size", m.shared_experts * m.expert_ffn);
    a.push_back("--moe-grouped-gemm");
    a.push_back("--moe-permute-fusion");
    if (s.ep > 1 && s.ep_dedup) {
      kv("--moe-token-dispatcher-type", "flex");
      kv("--moe-flex-dispatcher-backend", "deepep");
    } else if (s.ep > 1) {
      kv("--moe-token-dispatcher-type", "alltoall");
    }
    if (m.mtp_layers > 0) kv("--mtp-num-layers", m.mtp_layers);
    if (m.first_dense_layers > 0) {
      // Megatron's pattern syntax: 0 = dense layer, 1 = MoE layer.
      kv("--moe-layer-freq", fmt::format("([0]*{}+[1]*{})", m.first_dense_layers, m.MoeLayers()));
    }
  }
  if (s.recompute == Recompute::kSelective) {
    kv("--recompute-granularity", "selective");
  } else if (s.recompute == Recompute::kFull) {
    kv("--recompute-granularity", "full");
    kv("--recompute-method", "uniform");
    kv("--recompute-num-layers", 1);
  }
  if (s.cuda_graphs != CudaGraphs::kNone) {
    kv("--cuda-graph-impl", s.cuda_graphs == CudaGraphs::kFull ? "full_iteration" : "transformer_engine");
  }
  if (s.fused_expert_mlp && m.IsMoe()) a.push_back("--use-transformer-engine-op-fuser");
  if (s.sequence_parallel && s.tp > 1) a.push_back("--sequence-parallel");
  if (s.overlap_tp_comm && s.tp > 1) a.push_back("--tp-comm-overlap");
  if (s.overlap_ep_comm && s.ep > 1) {
    a.push_back("--overlap-moe-expert-parallel-comm");
    a.push_back("--delay-wgrad-compute");
  }
  if (s.zero_stage == 1) {
    a.push_back("--use-distributed-optimizer");
    if (s.overlap_grad_reduce) a.push_back("--overlap-param-gather");
  } else if (s.zero_stage >= 2) {
    // Megatron's FSDP shards gradients (optim_grads) or also weights.
    a.push_back("--use-megatron-fsdp");
    kv("--data-parallel-sharding-strategy", s.zero_stage == 2 ? "optim_grads" : "optim_grads_params");
  }
  if (s.overlap_grad_reduce) a.push_back("--overlap-grad-reduce");
  switch (s.precision) {
    case Precision::kBf16: a.push_back("--bf16"); break;
    case Precision::kFp16: a.push_back("--fp16"); break;
    case Precision::kFp8:
      a.push_back("--bf16");
      kv("--fp8-format", "hybrid");
      kv("--fp8-recipe", "delayed");
      break;
    case Precision::kFp8Current:
      a.push_back("--bf16");
      kv("--fp8-format", "hybrid");
      kv("--fp8-recipe", "tensorwise");
      break;
    case Precision::kMxfp8:
      a.push_back("--bf16");
      kv("--fp8-format", "e4m3");
      kv("--fp8-recipe", "mxfp8");
      break;
    case Precision::kNvfp4:
      a.push_back("--bf16");
      kv("--fp4-format", "e2m1");
      kv("--fp4-recipe", "nvfp4");
      break;
  }
  return a;
}

std::string MegatronArgsLine(const ModelSpec& m, const Strategy& s) {
  std::string out;
  for (const auto& t : MegatronArgs(m, s)) {
    if (!out.empty()) out += t.starts_with("--") ? " \\\n  " : " ";
    const bool quote = t.find_first_of("()*[]+ ") != std::string::npos;
    out += quote ? "'" + t + "'" : t;
  }
  return out;
}

nlohmann::json DeepSpeedConfig(const ModelSpec& m, const Strategy& s) {
  (void)m;
  nlohmann::json j;
  j["train_batch_size"] = s.GlobalBatch();
  j["train_micro_batch_size_per_gpu"] = s.micro_batch;
  j["gradient_accumulation_steps"] = s.grad_accum;
  j["gradient_clipping"] = 1.0;
  j["steps_per_print"] = 10;
  j["wall_clock_breakdown"] = false;
  if (s.precision == Precision::kFp16) {
    j["fp16"] = {{"enabled", true}, {"loss_scale", 0}, {"initial_scale_power", 16}};
  } else {
    // FP8 GEMMs come from Transformer Engine inside the model; the engine runs bf16.
    j["bf16"] = {{"enabled", true}};
  }
  j["zero_optimization"] = {{"stage", s.zero_stage},
                            {"overlap_comm", s.overlap_grad_reduce},
                            {"contiguous_gradients", true},
                            {"reduce_scatter", true}};
  if (s.recompute == Recompute::kFull) {
    j["activation_checkpointing"] = {{"partition_activations", s.tp > 1},
                                     {"contiguous_memory_optimization", true},
                                     {"number_checkpoints", m.layers / s.pp}};
  }
  return j;
}

std::vector<std::string> JsonKeyPaths(const nlohmann::json& j) {
  std::vector<std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out.push_back(it.key());
    if (it.value().is_object()) {
      for (const auto& sub : JsonKeyPaths(it.value())) out.push_back(it.key() + "." + sub);
    }
  }
  return out;
}

}  // namespace tidal::planner
