// Transformer model specifications (dense and MoE) and the FLOPs conventions
// used to turn a step time into "TFLOP/s per GPU".
//
// Presets come from the published architectures (papers, model cards, NeMo
// launcher configs) and are matched by the names used in published tables
// ("LLAMA3-70B", "Llama3 70B", "GPT-3 175B", ...). Any other model is given as
// a YAML or JSON file with the same fields (see docs/planner.md).
//
// Invariant of a validated ModelSpec: every size is positive, heads divide
// evenly into KV groups, and MoE fields are either all unset (dense) or
// consistent (top_k <= experts).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tidal::planner {

struct ModelSpec {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;     // = heads without GQA
  int head_dim = 0;     // kv_channels; 0 means hidden / heads
  int ffn = 0;          // dense MLP width (for MoE models: the dense layers' width)
  bool gated_mlp = false;  // SwiGLU/GeGLU: three MLP matrices instead of two
  int vocab = 0;
  int seq_len = 0;
  int global_batch = 0;  // sequences per optimizer step
  // MoE (experts == 0: dense model).
  int experts = 0;
  int top_k = 0;
  int expert_ffn = 0;
  int shared_experts = 0;     // each as wide as expert_ffn
  int first_dense_layers = 0;  // leading layers with a dense MLP (DeepSeek-V3: 3)
  // Multi-token prediction modules (DeepSeek-V3: 1): each is one more layer
  // like the last, a 2h -> h projection and its own output layer; Megatron's
  // FLOPs count includes them.
  int mtp_layers = 0;
  // Routing: the busiest expert's tokens over the mean (1 = balanced, as
  // force-balanced benchmark runs), and the capacity factor of token-drop
  // routing (0 = dropless: the busiest expert takes all its tokens; c > 0
  // drops what exceeds c x the mean). The critical rank computes
  // min(imbalance, capacity) x the mean tokens per expert.
  double moe_imbalance = 1.0;
  double moe_capacity_factor = 0.0;
  double MoeLoadFactor() const {
    return moe_capacity_factor > 0 ? std::min(moe_imbalance, moe_capacity_factor) : moe_imbalance;
  }
  bool tied_embeddings = false;
  // Multi-head latent attention (DeepSeek-V2/V3); kv_lora_rank == 0: off.
  // head_dim is then the no-position part of the query/key head.
  int q_lora_rank = 0;  // 0: queries projected directly from hidden
  int kv_lora_rank = 0;
  int rope_head_dim = 0;
  int v_head_dim = 0;

  bool IsMoe() const { return experts > 0; }
  bool IsMla() const { return kv_lora_rank > 0; }
  int HeadDim() const { return head_dim > 0 ? head_dim : hidden / heads; }
  // Per-token widths of the query and of one of key/value, as the
  // activation and context-parallel terms see them.
  double QDim() const;
  double KvDim() const;
  double AttentionMatrixParams() const;  // projection weights of one layer
  int MoeLayers() const { return IsMoe() ? layers - first_dense_layers : 0; }

  // Parameter counts (weights, not bytes).
  double AttentionParamsPerLayer() const;
  double DenseMlpParams() const;   // one dense MLP
  double ExpertParams() const;     // one routed expert
  double EmbeddingParams() const;  // input embedding (+ output layer unless tied)
  double TotalParams() const;
  double ActiveParams() const;     // per token: top_k routed experts, output layer, no input embedding
};

Status ValidateModel(const ModelSpec& m);

// Published-table name -> preset. Matching ignores case, spaces, '-', '_' and
// '.', so "LLAMA3-70B", "Llama3 70B" and "llama-3-70b" are the same model.
Result<ModelSpec> FindModelPreset(std::string_view name);
const std::vector<ModelSpec>& ModelPresets();
std::vector<std::string> ModelPresetNames();

// Reads a model from a YAML or JSON file (JSON is read as YAML). Keys are the
// ModelSpec field names; unknown keys are errors so a typo never goes unseen.
Result<ModelSpec> LoadModelFile(const std::string& path);

// How a published number counts FLOPs. Step time is what the performance
// model predicts; the convention converts it into the figure the source
// printed, so model and measurement are compared like for like.
enum class FlopsConvention {
  // Megatron-LM num_floating_point_operations(): 3 GEMM passes, attention
  // scores over the full s x s matrix (no causal halving). = Korthikanti eq. 7
  // for GPT. This is model FLOPs: MFU uses it.
  kMegatron,
  // Same with the attention-score term halved for the causal mask (NeMo
  // AutoModel and most FSDP code bases).
  kMegatronCausal,
  // Narayanan et al. (SC21) eq. 3: 96 B s l h^2 (1 + s/6h + V/16lh), i.e. the
  // transformer layers counted 4 times (full recomputation): hardware FLOPs.
  kNarayananEq3,
};

std::string_view FlopsConventionName(FlopsConvention c);

// FLOPs per token of one training step (forward + backward) by convention.
double FlopsPerToken(const ModelSpec& m, int seq_len, FlopsConvention c);

// Pieces used by the performance model, per token and forward pass only.
struct ForwardFlops {
  double linear = 0;      // QKV, output projection, dense MLP (GEMMs)
  double expert = 0;      // routed + shared expert GEMMs
  double attention = 0;   // QK^T and PV with the causal mask (flash attention)
  double logits = 0;      // output layer
};
ForwardFlops ForwardFlopsPerToken(const ModelSpec& m, int seq_len);

}  // namespace tidal::planner
