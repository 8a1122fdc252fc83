#include "planner/model.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <yaml-cpp/yaml.h>

namespace tidal::planner {
namespace {

// Lower-cases and drops separators so table spellings compare equal.
std::string NormalizeName(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) out.push_back(static_cast<char>(std::tolower(c)));
  }
  return out;
}

struct Preset {
  ModelSpec spec;
  std::vector<std::string> aliases;  // as printed in published tables
};

ModelSpec Dense(std::string name, int layers, int hidden, int heads, int kv_heads, int ffn, bool gated,
                int vocab, int seq, int gbs) {
  ModelSpec m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn = ffn;
  m.gated_mlp = gated;
  m.vocab = vocab;
  m.seq_len = seq;
  m.global_batch = gbs;
  return m;
}

ModelSpec Moe(ModelSpec m, int experts, int top_k, int expert_ffn, int shared, int first_dense, int mtp = 0) {
  m.mtp_layers = mtp;
  m.experts = experts;
  m.top_k = top_k;
  m.expert_ffn = expert_ffn;
  m.shared_experts = shared;
  m.first_dense_layers = first_dense;
  return m;
}

ModelSpec Mla(ModelSpec m, int q_lora, int kv_lora, int nope_dim, int rope_dim, int v_dim) {
  m.q_lora_rank = q_lora;
  m.kv_lora_rank = kv_lora;
  m.head_dim = nope_dim;
  m.rope_head_dim = rope_dim;
  m.v_head_dim = v_dim;
  return m;
}

ModelSpec WithHeadDim(ModelSpec m, int head_dim) {
  m.head_dim = head_dim;
  return m;
}

// Sources: GPT-3 (Brown et al. 2020, Tab 2.1; vocab padded to 51200 as in
// Megatron); Llama 2 (Touvron et al. 2023) and Llama 3 (Llama Team 2024, Tab
// 3) model cards; Mixtral (Jiang et al. 2024) and the Mixtral 8x22B card;
// DeepSeek-V3 report sec. 4.2 (MLA with q/kv LoRA ranks 1536/512);
// Qwen3 technical report Tab 2; gpt-oss model card; Nemotron-4 15B / 340B
// reports; NeMo launcher configs for GPT3-5B/20B and Nemotron-8B/22B.
const std::vector<Preset>& Presets() {
  static const std::vector<Preset> presets = [] {
    std::vector<Preset> p;
    p.push_back({Dense("gpt3-175b", 96, 12288, 96, 96, 49152, false, 51200, 2048, 1536),
                 {"gpt3-175b", "gpt-3 175b", "gpt 175b (gpt-3)", "gpt3 175b", "gpt 174.6b (ptd-p)",
                  "gpt 174.6b (zero-3)", "gpt-3 (177b, 131072 vocab)"}});
    p.push_back({Dense("mt-nlg-530b", 105, 20480, 128, 128, 81920, false, 51200, 2048, 1920),
                 {"mt-nlg-530b", "gpt 530b (mt-nlg)", "gpt 529.6b (zero-3)", "gpt 529.6b (ptd-p)", "megatron-turing nlg 530b"}});
    // BLOOM (BigScience 2022): 70 layers, 14336 hidden, 112 heads, 250880 vocab, GBS 2048.
    p.push_back({Dense("bloom-176b", 70, 14336, 112, 112, 4 * 14336, false, 250880, 2048, 2048),
                 {"bloom-176b", "bloom", "bloom 176b", "tr11-176b-ml"}});
    p.push_back({Dense("gpt3-5b", 24, 4096, 32, 32, 16384, false, 50304, 2048, 2048), {"gpt3-5b"}});
    p.push_back({Dense("gpt3-20b", 44, 6144, 48, 48, 24576, false, 50304, 2048, 256), {"gpt3-20b"}});
    p.push_back({Dense("llama2-7b", 32, 4096, 32, 32, 11008, true, 32000, 4096, 1024),
                 {"llama2-7b", "llama-2-7b", "llama 2 7b"}});
    p.push_back({Dense("llama2-13b", 40, 5120, 40, 40, 13824, true, 32000, 4096, 1024),
                 {"llama2-13b", "llama-2-13b", "llama 2 13b"}});
    p.push_back({Dense("llama2-70b", 80, 8192, 64, 8, 28672, true, 32000, 4096, 1024),
                 {"llama2-70b", "llama-2-70b", "llama 2 70b"}});
    // Llama 3.2 1B (Meta's model card: 16 layers, 2048 hidden, 32 heads, 8
    // KV heads, FFN 8192, the Llama 3 vocabulary): a model one GPU trains.
    p.push_back({Dense("llama3.2-1b", 16, 2048, 32, 8, 8192, true, 128256, 8192, 512),
                 {"llama3.2-1b", "llama 3.2 1b", "llama-3.2-1b"}});
    p.push_back({Dense("llama3-8b", 32, 4096, 32, 8, 14336, true, 128256, 8192, 1024),
                 {"llama3-8b", "llama3 8b", "llama-3-8b", "llama 3 8b", "llama3.1-8b"}});
    p.push_back({Dense("llama3-70b", 80, 8192, 64, 8, 28672, true, 128256, 8192, 1024),
                 {"llama3-70b", "llama3 70b", "llama-3-70b", "llama 3 70b", "llama3.1-70b"}});
    p.push_back({Dense("llama3-405b", 126, 16384, 128, 8, 53248, true, 128256, 8192, 2048),
                 {"llama3-405b", "llama3.1-405b", "llama 3.1 405b", "llama3 405b", "llama-3.1-405b"}});
    p.push_back({Moe(Dense("mixtral-8x7b", 32, 4096, 32, 8, 14336, true, 32000, 4096, 1024), 8, 2, 14336, 0, 0),
                 {"mixtral-8x7b", "mixtral 8x7b"}});
    p.push_back({Moe(Dense("mixtral-8x22b", 56, 6144, 48, 8, 16384, true, 32768, 4096, 1024), 8, 2, 16384, 0, 0),
                 {"mixtral-8x22b", "mixtral 8x22b"}});
    p.push_back({Moe(Mla(Dense("deepseek-v3", 61, 7168, 128, 128, 18432, true, 129280, 4096, 15360), 1536, 512, 128,
                         64, 128),
                     256, 8, 2048, 1, 3, /*mtp=*/1),
                 {"deepseek-v3", "deepseek v3", "deepseek v3 671b", "deepseek-v3 671b"}});
    // Kimi K2 (Moonshot AI, 2025): DeepSeek-V3's architecture with 384
    // experts, 64 heads, one leading dense layer, no MTP module; batch 67M
    // tokens (technical report). Public config.json of moonshotai/Kimi-K2.
    p.push_back({Moe(Mla(Dense("kimi-k2", 61, 7168, 64, 64, 18432, true, 163840, 4096, 16384), 1536, 512, 128, 64,
                         128),
                     384, 8, 2048, 1, 1),
                 {"kimi-k2", "kimi k2", "kimi-k2 1t"}});
    p.push_back({Moe(WithHeadDim(Dense("qwen3-30b-a3b", 48, 2048, 32, 4, 6144, true, 151936, 4096, 1024), 128),
                     128, 8, 768, 0, 0),
                 {"qwen3-30b-a3b", "qwen3 moe 30b", "qwen3-30b"}});
    p.push_back({Moe(WithHeadDim(Dense("qwen3-235b-a22b", 94, 4096, 64, 4, 12288, true, 151936, 4096, 1024), 128),
                     128, 8, 1536, 0, 0),
                 {"qwen3-235b-a22b", "qwen3 moe 235b", "qwen3-235b"}});
    p.push_back({Moe(WithHeadDim(Dense("gpt-oss-20b", 24, 2880, 64, 8, 2880, true, 201088, 4096, 1024), 64),
                     32, 4, 2880, 0, 0),
                 {"gpt-oss-20b", "gpt-oss 20b", "gptoss-20b"}});
    p.push_back({Moe(WithHeadDim(Dense("gpt-oss-120b", 36, 2880, 64, 8, 2880, true, 201088, 4096, 1024), 64),
                     128, 4, 2880, 0, 0),
                 {"gpt-oss-120b", "gpt-oss 120b", "gptoss-120b"}});
    p.push_back({Dense("nemotron-4-15b", 32, 6144, 48, 8, 24576, false, 256000, 4096, 2304),
                 {"nemotron-4-15b", "nemotron-15b", "nemotron 4 15b"}});
    p.push_back({Dense("nemotron-4-340b", 96, 18432, 96, 8, 73728, false, 256000, 4096, 2304),
                 {"nemotron-4-340b", "nemotron-340b", "nemotron 4 340b"}});
    p.push_back({Dense("nemotron-8b", 32, 4096, 32, 32, 16384, false, 256000, 4096, 256), {"nemotron-8b"}});
    p.push_back({Dense("nemotron-22b", 40, 6144, 48, 48, 24576, false, 256000, 4096, 256), {"nemotron-22b"}});
    return p;
  }();
  return presets;
}

}  // namespace

double ModelSpec::QDim() const {
  return static_cast<double>(heads) * (HeadDim() + (IsMla() ? rope_head_dim : 0));
}

double ModelSpec::KvDim() const {
  if (IsMla()) return static_cast<double>(heads) * (HeadDim() + rope_head_dim + v_head_dim) / 2.0;
  return static_cast<double>(kv_heads) * HeadDim();
}

double ModelSpec::AttentionMatrixParams() const {
  const double h = hidden;
  if (IsMla()) {
    const double qk = HeadDim() + rope_head_dim;
    const double q = q_lora_rank > 0 ? h * q_lora_rank + static_cast<double>(q_lora_rank) * heads * qk : h * heads * qk;
    const double kv = h * (kv_lora_rank + rope_head_dim) + static_cast<double>(kv_lora_rank) * heads * (HeadDim() + v_head_dim);
    return q + kv + static_cast<double>(heads) * v_head_dim * h;
  }
  const double q = static_cast<double>(heads) * HeadDim();
  const double kv = static_cast<double>(kv_heads) * HeadDim();
  return h * q + 2.0 * h * kv + q * h;
}

double ModelSpec::AttentionParamsPerLayer() const {
  // + the two layer norms (and MLA's latent norms)
  return AttentionMatrixParams() + 2.0 * hidden + (IsMla() ? q_lora_rank + kv_lora_rank : 0);
}

double ModelSpec::DenseMlpParams() const { return static_cast<double>(hidden) * ffn * (gated_mlp ? 3 : 2); }

double ModelSpec::ExpertParams() const {
  return static_cast<double>(hidden) * expert_ffn * (gated_mlp ? 3 : 2);
}

double ModelSpec::EmbeddingParams() const {
  return static_cast<double>(vocab) * hidden * (tied_embeddings ? 1 : 2);
}

double ModelSpec::TotalParams() const {
  const int dense_layers = layers - MoeLayers();
  double p = layers * AttentionParamsPerLayer() + dense_layers * DenseMlpParams();
  if (IsMoe()) {
    p += MoeLayers() * ((experts + shared_experts) * ExpertParams() + static_cast<double>(hidden) * experts);
  }
  return p + EmbeddingParams();
}

double ModelSpec::ActiveParams() const {
  const int dense_layers = layers - MoeLayers();
  double p = layers * AttentionParamsPerLayer() + dense_layers * DenseMlpParams();
  if (IsMoe()) p += MoeLayers() * (top_k + shared_experts) * ExpertParams();
  // The input embedding is a lookup, not compute: only the output layer counts
  // (as in the gpt-oss and Qwen3 "active parameters" figures).
  return p + static_cast<double>(vocab) * hidden;
}

Status ValidateModel(const ModelSpec& m) {
  auto bad = [&](std::string_view field, std::string_view why) {
    return MakeError(ErrorCode::kInvalidArgument, "model '{}': field '{}' {}", m.name, field, why);
  };
  // Upper bounds keep every derived product inside 64-bit/int arithmetic and
  // the search finite; they are far above any real model.
  const std::pair<const char*, std::pair<int, int>> limits[] = {
      {"layers", {m.layers, 10000}},       {"hidden", {m.hidden, 1 << 20}},   {"heads", {m.heads, 1 << 16}},
      {"kv_heads", {m.kv_heads, 1 << 16}}, {"ffn", {m.ffn, 1 << 24}},         {"vocab", {m.vocab, 1 << 24}},
      {"seq_len", {m.seq_len, 1 << 26}},   {"global_batch", {m.global_batch, 1 << 26}},
      {"experts", {m.experts, 1 << 16}},   {"expert_ffn", {m.expert_ffn, 1 << 24}},
      {"head_dim", {m.head_dim, 1 << 16}}, {"shared_experts", {m.shared_experts, 1 << 10}},
      {"kv_lora_rank", {m.kv_lora_rank, 1 << 20}}, {"q_lora_rank", {m.q_lora_rank, 1 << 20}},
      {"rope_head_dim", {m.rope_head_dim, 1 << 16}}, {"v_head_dim", {m.v_head_dim, 1 << 16}},
  };
  for (const auto& [field, vl] : limits) {
    if (vl.first > vl.second) return bad(field, fmt::format("is above the supported maximum {}", vl.second));
  }
  if (m.layers <= 0) return bad("layers", "must be positive");
  if (m.hidden <= 0) return bad("hidden", "must be positive");
  if (m.heads <= 0) return bad("heads", "must be positive");
  if (m.kv_heads <= 0 || m.heads % m.kv_heads != 0) return bad("kv_heads", "must be positive and divide heads");
  if (m.head_dim == 0 && m.hidden % m.heads != 0) return bad("head_dim", "must be set when heads do not divide hidden");
  if (m.ffn <= 0 && m.MoeLayers() < m.layers) return bad("ffn", "must be positive");
  if (m.vocab <= 0) return bad("vocab", "must be positive");
  if (m.seq_len <= 0) return bad("seq_len", "must be positive");
  if (m.global_batch <= 0) return bad("global_batch", "must be positive");
  if (m.experts < 0) return bad("experts", "must not be negative");
  if (m.IsMoe()) {
    if (m.top_k <= 0 || m.top_k > m.experts) return bad("top_k", "must be in 1..experts");
    if (m.expert_ffn <= 0) return bad("expert_ffn", "must be positive for an MoE model");
    if (m.first_dense_layers < 0 || m.first_dense_layers >= m.layers)
      return bad("first_dense_layers", "must be in 0..layers-1");
  }
  if (m.mtp_layers < 0 || m.mtp_layers > m.layers) return bad("mtp_layers", "must be in 0..layers");
  if (!(m.moe_imbalance >= 1.0 && m.moe_imbalance <= 1000))
    return bad("moe_imbalance", "must be in [1, 1000]: the busiest expert's tokens over the mean");
  if (!(m.moe_capacity_factor == 0 || (m.moe_capacity_factor >= 1.0 && m.moe_capacity_factor <= 1000)))
    return bad("moe_capacity_factor", "must be 0 (dropless) or in [1, 1000]");
  if (m.IsMla() && (m.head_dim <= 0 || m.v_head_dim <= 0 || m.rope_head_dim < 0 || m.q_lora_rank < 0))
    return bad("kv_lora_rank", "multi-latent attention needs head_dim, v_head_dim and rope_head_dim");
  return Ok();
}

const std::vector<ModelSpec>& ModelPresets() {
  static const std::vector<ModelSpec> specs = [] {
    std::vector<ModelSpec> v;
    for (const auto& p : Presets()) v.push_back(p.spec);
    return v;
  }();
  return specs;
}

std::vector<std::string> ModelPresetNames() {
  std::vector<std::string> names;
  for (const auto& p : Presets()) names.push_back(p.spec.name);
  return names;
}

Result<ModelSpec> FindModelPreset(std::string_view name) {
  const std::string key = NormalizeName(name);
  for (const auto& p : Presets()) {
    if (NormalizeName(p.spec.name) == key) return p.spec;
    for (const auto& a : p.aliases) {
      if (NormalizeName(a) == key) return p.spec;
    }
  }
  return MakeError(ErrorCode::kNotFound, "unknown model '{}'; presets: {}; or pass a YAML/JSON model file",
                   name, fmt::join(ModelPresetNames(), ", "));
}

Result<ModelSpec> LoadModelFile(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: cannot read model file: {}", path, e.mark.line + 1, e.msg);
  }
  if (!root.IsMap()) return MakeError(ErrorCode::kParse, "{}: model file must be a mapping of field: value", path);
  ModelSpec m;
  m.name = path;
  std::map<std::string, int*> ints = {
      {"layers", &m.layers},         {"hidden", &m.hidden},
      {"heads", &m.heads},           {"kv_heads", &m.kv_heads},
      {"head_dim", &m.head_dim},     {"ffn", &m.ffn},
      {"vocab", &m.vocab},           {"seq_len", &m.seq_len},
      {"global_batch", &m.global_batch}, {"experts", &m.experts},
      {"top_k", &m.top_k},           {"expert_ffn", &m.expert_ffn},
      {"shared_experts", &m.shared_experts}, {"first_dense_layers", &m.first_dense_layers},
      {"mtp_layers", &m.mtp_layers},
      {"q_lora_rank", &m.q_lora_rank}, {"kv_lora_rank", &m.kv_lora_rank},
      {"rope_head_dim", &m.rope_head_dim}, {"v_head_dim", &m.v_head_dim},
  };
  std::map<std::string, bool*> bools = {{"gated_mlp", &m.gated_mlp}, {"tied_embeddings", &m.tied_embeddings}};
  std::map<std::string, double*> doubles = {{"moe_imbalance", &m.moe_imbalance},
                                            {"moe_capacity_factor", &m.moe_capacity_factor}};
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>("");
    const int line = kv.first.Mark().line + 1;
    try {
      if (key == "name") {
        m.name = kv.second.as<std::string>();
      } else if (auto it = ints.find(key); it != ints.end()) {
        *it->second = kv.second.as<int>();
      } else if (auto bt = bools.find(key); bt != bools.end()) {
        *bt->second = kv.second.as<bool>();
      } else if (auto dt = doubles.find(key); dt != doubles.end()) {
        *dt->second = kv.second.as<double>();
      } else {
        return MakeError(ErrorCode::kParse,
                         "{}:{}: unknown field '{}' (known: name, gated_mlp, tied_embeddings, moe_imbalance, "
                         "moe_capacity_factor, {})",
                         path, line, key, [&] {
                           std::vector<std::string> k;
                           for (const auto& [n, _] : ints) k.push_back(n);
                           return fmt::format("{}", fmt::join(k, ", "));
                         }());
      }
    } catch (const YAML::Exception&) {
      return MakeError(ErrorCode::kParse, "{}:{}: field '{}': expected {}", path, line, key,
                       ints.contains(key)      ? "an integer"
                       : bools.contains(key)   ? "true or false"
                       : doubles.contains(key) ? "a number"
                                               : "a string");
    }
  }
  if (m.kv_heads == 0) m.kv_heads = m.heads;
  if (auto s = ValidateModel(m); !s) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: {}", path, s.error().message);
  }
  return m;
}

std::string_view FlopsConventionName(FlopsConvention c) {
  switch (c) {
    case FlopsConvention::kMegatron: return "megatron";
    case FlopsConvention::kMegatronCausal: return "megatron-causal";
    case FlopsConvention::kNarayananEq3: return "narayanan-eq3";
  }
  return "?";
}

ForwardFlops ForwardFlopsPerToken(const ModelSpec& m, int seq_len) {
  ForwardFlops f;
  const double h = m.hidden;
  const double glu = m.gated_mlp ? 3 : 2;
  const int dense_layers = m.layers - m.MoeLayers();
  const double attn_linear = 2 * m.AttentionMatrixParams();
  f.linear = m.layers * attn_linear + dense_layers * 2 * h * m.ffn * glu;
  if (m.IsMoe()) f.expert = m.MoeLayers() * (m.top_k + m.shared_experts) * 2 * h * m.expert_ffn * glu;
  // QK^T and PV: 2 * 2 * s * q per token over the full matrix, halved by the
  // causal mask (flash attention skips the masked blocks).
  // MLA: QK^T over qk = nope + rope dims, PV over v dims.
  const double score_dim = m.IsMla() ? m.heads * (m.HeadDim() + m.rope_head_dim + m.v_head_dim) / 2.0
                                     : static_cast<double>(m.heads) * m.HeadDim();
  f.attention = m.layers * 2.0 * seq_len * score_dim;
  f.logits = 2 * h * m.vocab;
  if (m.mtp_layers > 0) {
    // Each MTP module: one more layer like the last one, the 2h -> h
    // projection and an output layer (Megatron-LM's FLOPs count).
    const bool last_moe = m.IsMoe();
    const int k = m.mtp_layers;
    f.linear += k * (attn_linear + (last_moe ? 0.0 : 2 * h * m.ffn * glu) + 2 * 2 * h * h);
    if (last_moe) f.expert += k * (m.top_k + m.shared_experts) * 2 * h * m.expert_ffn * glu;
    f.attention += k * 2.0 * seq_len * score_dim;
    f.logits *= 1 + k;
  }
  return f;
}

double FlopsPerToken(const ModelSpec& m, int seq_len, FlopsConvention c) {
  const ForwardFlops f = ForwardFlopsPerToken(m, seq_len);
  switch (c) {
    case FlopsConvention::kMegatron:
      return 3 * (f.linear + f.expert + 2 * f.attention + f.logits);
    case FlopsConvention::kMegatronCausal:
      return 3 * (f.linear + f.expert + f.attention + f.logits);
    case FlopsConvention::kNarayananEq3:
      return 4 * (f.linear + f.expert + 2 * f.attention) + 3 * f.logits;
  }
  return 0;
}

}  // namespace tidal::planner
