#include "planner/calibration.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <regex>

#include "common/csv.h"
#include "common/strings.h"

namespace tidal::planner {
namespace {

bool Has(const std::string& hay, std::string_view needle) { return hay.find(needle) != std::string::npos; }

// A number in the notes after `key`, e.g. "tokens/s/gpu=716" or
// "iteration time 13.75 s".
std::optional<double> NoteNumber(const std::string& notes_lower, const std::string& pattern) {
  std::smatch m;
  const std::regex re(pattern);
  if (std::regex_search(notes_lower, m, re) && m.size() > 1) {
    try {
      return std::stod(m[1].str());
    } catch (...) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

struct Columns {
  size_t source, model, layers, hidden, heads, ffn, vocab, seq_len, global_batch, micro_batch, gpus, gpu_type, tp, pp,
      dp, cp, ep, vpp, recompute, zero_stage, tflops, mfu, notes;
};

Result<Columns> FindColumns(const CsvTable& t) {
  Columns c{};
  const std::pair<const char*, size_t*> want[] = {
      {"source", &c.source},       {"model", &c.model},
      {"layers", &c.layers},       {"hidden", &c.hidden},
      {"heads", &c.heads},         {"ffn", &c.ffn},
      {"vocab", &c.vocab},         {"seq_len", &c.seq_len},
      {"global_batch", &c.global_batch}, {"micro_batch", &c.micro_batch},
      {"gpus", &c.gpus},           {"gpu_type", &c.gpu_type},
      {"tp", &c.tp},               {"pp", &c.pp},
      {"dp", &c.dp},               {"cp", &c.cp},
      {"ep", &c.ep},               {"vpp", &c.vpp},
      {"recompute", &c.recompute}, {"zero_stage", &c.zero_stage},
      {"achieved_tflops_per_gpu", &c.tflops}, {"mfu_percent", &c.mfu},
      {"notes", &c.notes},
  };
  for (auto [name, slot] : want) {
    TIDAL_ASSIGN_OR_RETURN(*slot, t.RequireColumn(name));
  }
  return c;
}

// Optional integer column: empty -> nullopt, malformed -> error.
Result<std::optional<int>> OptInt(const CsvRow& r, size_t col, int64_t min, int64_t max) {
  if (r.Empty(col)) return std::optional<int>();
  TIDAL_ASSIGN_OR_RETURN(int64_t v, r.IntLenient(col, min, max));
  return std::optional<int>(static_cast<int>(v));
}
Result<std::optional<double>> OptDouble(const CsvRow& r, size_t col, double min, double max) {
  if (r.Empty(col)) return std::optional<double>();
  TIDAL_ASSIGN_OR_RETURN(double v, r.Double(col, min, max));
  return std::optional<double>(v);
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Split RuleSplit(const std::vector<SplitRule>& rules, const CalibrationCase& k, const std::string& notes_lower) {
  const std::string file = AsciiLower(BaseName(k.file));
  const std::string source = AsciiLower(k.source);
  const std::string model = AsciiLower(k.model);
  for (const auto& r : rules) {
    if (Has(file, r.file) && Has(source, r.source) && Has(model, r.model) && Has(notes_lower, r.notes)) return r.split;
  }
  return Split::kValidation;
}

// Fills one case from one row; returns a skip reason or empty.
Result<std::string> FillCase(const CsvRow& r, const Columns& c, CalibrationCase& k) {
  TIDAL_ASSIGN_OR_RETURN(std::string_view source, r.Str(c.source));
  TIDAL_ASSIGN_OR_RETURN(std::string_view model, r.Str(c.model));
  TIDAL_ASSIGN_OR_RETURN(std::string_view gpu_type, r.Str(c.gpu_type));
  TIDAL_ASSIGN_OR_RETURN(std::string_view notes_raw, r.Str(c.notes));
  TIDAL_ASSIGN_OR_RETURN(std::string_view recompute_raw, r.Str(c.recompute));
  TIDAL_ASSIGN_OR_RETURN(std::string_view zero_raw, r.Str(c.zero_stage));
  k.line = r.line();
  k.source = source;
  k.model = model;
  k.gpu_type = gpu_type;
  const std::string notes = AsciiLower(notes_raw);
  const std::string src = AsciiLower(source);

  TIDAL_ASSIGN_OR_RETURN(auto gpus, OptInt(r, c.gpus, 1, 10'000'000));
  TIDAL_ASSIGN_OR_RETURN(auto layers, OptInt(r, c.layers, 1, 100000));
  TIDAL_ASSIGN_OR_RETURN(auto hidden, OptInt(r, c.hidden, 1, 10'000'000));
  TIDAL_ASSIGN_OR_RETURN(auto heads, OptInt(r, c.heads, 1, 100000));
  TIDAL_ASSIGN_OR_RETURN(auto ffn, OptInt(r, c.ffn, 1, 100'000'000));
  TIDAL_ASSIGN_OR_RETURN(auto vocab, OptInt(r, c.vocab, 1, 100'000'000));
  TIDAL_ASSIGN_OR_RETURN(auto seq, OptInt(r, c.seq_len, 1, 1'000'000'000));
  TIDAL_ASSIGN_OR_RETURN(auto gbs, OptInt(r, c.global_batch, 1, 1'000'000'000));
  TIDAL_ASSIGN_OR_RETURN(auto mb, OptInt(r, c.micro_batch, 1, 65536));
  TIDAL_ASSIGN_OR_RETURN(auto tp, OptInt(r, c.tp, 1, 65536));
  TIDAL_ASSIGN_OR_RETURN(auto pp, OptInt(r, c.pp, 1, 65536));
  TIDAL_ASSIGN_OR_RETURN(auto dp, OptInt(r, c.dp, 1, 10'000'000));
  TIDAL_ASSIGN_OR_RETURN(auto cp, OptInt(r, c.cp, 1, 65536));
  TIDAL_ASSIGN_OR_RETURN(auto ep, OptInt(r, c.ep, 1, 65536));
  TIDAL_ASSIGN_OR_RETURN(auto vpp, OptInt(r, c.vpp, 1, 65536));
  TIDAL_ASSIGN_OR_RETURN(auto tflops, OptDouble(r, c.tflops, 0, 1e6));
  TIDAL_ASSIGN_OR_RETURN(auto mfu, OptDouble(r, c.mfu, 0, 100));

  if (!gpus) return std::string("gpus missing");
  k.gpus = *gpus;
  auto gpu = FindGpu(gpu_type);
  if (!gpu) return gpu.error().message;
  k.gpu = *gpu;

  // Architecture: the row's columns win over a preset of the same name. A
  // parenthesised qualifier ("DeepSeekV3 (dropless)", "(w/o MTP)") names a
  // routing or training variant of the same architecture.
  std::string_view base_model = model;
  auto preset = FindModelPreset(model);
  if (const size_t paren = model.find(" ("); !preset && paren != std::string_view::npos) {
    base_model = model.substr(0, paren);
    preset = FindModelPreset(base_model);
    if (preset) k.assumptions.push_back(fmt::format("architecture of '{}' for '{}'", base_model, model));
  }
  const std::string qualifier = AsciiLower(model.substr(base_model.size()));
  const bool mtp_stated = Has(qualifier, "mtp");
  ModelSpec m;
  if (preset) {
    m = *preset;
  } else if (!layers || !hidden || !heads) {
    return fmt::format("architecture unknown: layers/hidden/heads not given and no preset named '{}'", model);
  } else {
    m.name = model;
    m.kv_heads = *heads;
  }
  if (layers) m.layers = *layers;
  if (hidden) m.hidden = *hidden;
  if (heads) {
    if (!preset || preset->heads != *heads) m.kv_heads = *heads;  // no GQA unless the preset says so
    m.heads = *heads;
  }
  if (ffn && !(preset && preset->IsMoe())) m.ffn = *ffn;  // MoE rows give the expert width here
  if (m.ffn == 0) {
    m.ffn = 4 * m.hidden;
    k.assumptions.push_back("ffn = 4h (Megatron GPT default)");
  }
  if (vocab) m.vocab = *vocab;
  if (Has(qualifier, "w/o mtp")) m.mtp_layers = 0;
  if (m.vocab == 0) return std::string("vocab missing and no preset");
  if (seq) m.seq_len = *seq;
  if (m.seq_len == 0) return std::string("seq_len missing and no preset");
  if (!gbs) return std::string("global_batch missing");
  m.global_batch = *gbs;
  if (auto s = ValidateModel(m); !s) return s.error().message;
  k.spec = m;

  // Precision recipe from the notes; A100 has one 16-bit peak so fp16/bf16 agree.
  Precision prec;
  if (Has(notes, "nvfp4")) {
    prec = Precision::kNvfp4;
  } else if (Has(notes, "mxfp8") || Has(notes, "fp8-mx")) {
    prec = Precision::kMxfp8;
  } else if (Has(notes, "fp8-cs") || Has(notes, "current scaling")) {
    prec = Precision::kFp8Current;
  } else if (Has(notes, "fp8-ds") || Has(notes, "delayed scaling")) {
    prec = Precision::kFp8;
  } else if (Has(notes, "precision column absent")) {
    return std::string("precision recipe not stated (the source implies FP8 but not its scaling: per-tensor or block)");
  } else if (Has(notes, "fp8")) {
    if (Has(src, "megatron-bridge")) {
      prec = Precision::kFp8Current;
      k.assumptions.push_back("FP8 recipe: current scaling (Megatron-Bridge's FP8 recipe; its 25.11 table labels "
                              "these runs FP8-CS)");
    } else {
      prec = Precision::kFp8;
      k.assumptions.push_back("FP8 recipe: delayed scaling (Transformer Engine's default before 2025)");
    }
  } else if (Has(notes, "bf16")) {
    prec = Precision::kBf16;
  } else if (Has(notes, "fp16")) {
    prec = Precision::kFp16;
  } else if (k.gpu.fp8_tflops <= 0) {
    prec = Precision::kBf16;
    k.assumptions.push_back("precision not stated: 16-bit (the GPU has no FP8; fp16 and bf16 share a peak)");
  } else if (tflops && mfu && *mfu > 0) {
    const double implied_peak = *tflops / (*mfu / 100.0);
    if (std::abs(implied_peak / k.gpu.bf16_tflops - 1) < 0.05) {
      prec = Precision::kBf16;
      k.assumptions.push_back(fmt::format("precision bf16 inferred: TFLOPs / MFU = {:.0f} = BF16 peak", implied_peak));
    } else if (std::abs(implied_peak / k.gpu.fp8_tflops - 1) < 0.05) {
      prec = Precision::kFp8;
      k.assumptions.push_back(fmt::format("precision fp8 inferred: TFLOPs / MFU = {:.0f} = FP8 peak", implied_peak));
    } else {
      return fmt::format("precision not stated and TFLOPs/MFU = {:.0f} matches no peak", implied_peak);
    }
  } else {
    return std::string("precision not stated");
  }
  if (auto p = k.gpu.PeakFlops(prec); !p) return p.error().message;

  // Parallel layout.
  Strategy s;
  s.precision = prec;
  if (tp && pp) {
    s.tp = *tp;
    s.pp = *pp;
  } else if (Has(notes, "(tpxpp)=1;") || Has(notes, "(tpxpp)=1 ")) {
    s.tp = s.pp = 1;
  } else {
    return std::string("tp/pp not given (the split of model parallelism is unknown)");
  }
  s.cp = cp.value_or(1);
  s.ep = ep.value_or(1);
  s.vpp = vpp.value_or(1);
  // Sizes are range-checked above; the product is formed in 64 bits so a
  // nonsense row is a skip reason, not an overflow.
  const long long model_parallel = static_cast<long long>(s.tp) * s.pp * s.cp;
  if (model_parallel > k.gpus || k.gpus % model_parallel != 0) return std::string("gpus not divisible by tp*pp*cp");
  s.dp = k.gpus / (s.tp * s.pp * s.cp);
  if (dp && *dp != s.dp) {
    return fmt::format("dp column {} disagrees with gpus/(tp*pp*cp) = {}", *dp, s.dp);
  }
  s.micro_batch = mb.value_or(1);
  if (!mb) k.assumptions.push_back("micro-batch 1 (not stated; Megatron examples' value)");
  if (m.global_batch % (static_cast<long long>(s.micro_batch) * s.dp) != 0) {
    return fmt::format("global batch {} not divisible by micro-batch*dp = {}", m.global_batch, s.micro_batch * s.dp);
  }
  s.grad_accum = m.global_batch / (s.micro_batch * s.dp);

  // FLOPs convention (and, for a model with multi-token prediction whose row
  // does not say, whether the MTP module ran: its FLOPs are counted).
  FlopsConvention conv = FlopsConvention::kMegatron;
  if (auto tok = NoteNumber(notes, R"(tokens/s/gpu=([0-9.]+))"); tok && tflops) {
    const double implied = *tflops * 1e12 / *tok;
    std::vector<int> mtp_options = {m.mtp_layers};
    if (m.mtp_layers > 0 && !mtp_stated) mtp_options.push_back(0);
    double best = 1e9, meg = 0, cau = 0;
    int best_mtp = m.mtp_layers;
    for (int mtp : mtp_options) {
      ModelSpec v = m;
      v.mtp_layers = mtp;
      const double fm = FlopsPerToken(v, v.seq_len, FlopsConvention::kMegatron);
      const double fc = FlopsPerToken(v, v.seq_len, FlopsConvention::kMegatronCausal);
      if (mtp == m.mtp_layers) meg = fm, cau = fc;
      const double em = std::abs(implied / fm - 1), ec = std::abs(implied / fc - 1);
      if (std::min(em, ec) < best) {
        best = std::min(em, ec);
        best_mtp = mtp;
        conv = em <= ec ? FlopsConvention::kMegatron : FlopsConvention::kMegatronCausal;
      }
    }
    if (best > 0.04) {
      return fmt::format(
          "FLOPs convention unclear: TFLOPs / tokens-per-s = {:.3g} FLOP/token, Megatron formula {:.3g}, causal "
          "{:.3g}",
          implied, meg, cau);
    }
    if (best_mtp != m.mtp_layers) {
      k.assumptions.push_back(fmt::format("no MTP module (TFLOPs / tokens-per-s matches {} MTP layers)", best_mtp));
      m.mtp_layers = best_mtp;
      k.spec = m;
    }
  } else if (Has(notes, "eq.3") || Has(notes, "incl. recompute")) {
    conv = FlopsConvention::kNarayananEq3;
  } else if (Has(notes, "eq.7") || Has(notes, "2024 megatron")) {
    conv = FlopsConvention::kMegatron;
  } else if (Has(src, "2104.04473")) {
    conv = FlopsConvention::kNarayananEq3;
    k.assumptions.push_back("FLOPs convention: the paper's eq. 3");
  } else if (Has(src, "2205.05198")) {
    conv = FlopsConvention::kMegatron;
    k.assumptions.push_back("FLOPs convention: the paper's eq. 7 (model FLOPs)");
  } else if (Has(src, "nvidia/nemo:")) {
    conv = FlopsConvention::kMegatron;
    k.assumptions.push_back("FLOPs convention: NeMo's Megatron formula (checked on rows printing tokens/s)");
  } else {
    return std::string("FLOPs convention not stated");
  }
  k.convention = conv;

  // Recomputation and sequence parallelism.
  const std::string rc = AsciiLower(recompute_raw);
  if (Has(rc, "microbatch-level")) return std::string("micro-batch-level recomputation is not modelled");
  if (rc.starts_with("full")) {
    s.recompute = Recompute::kFull;
  } else if (rc.starts_with("selective")) {
    s.recompute = Recompute::kSelective;
  } else if (rc.empty()) {
    s.recompute = conv == FlopsConvention::kNarayananEq3 ? Recompute::kFull : Recompute::kNone;
    k.assumptions.push_back(fmt::format("recompute {} (not stated{})", RecomputeName(s.recompute),
                                        conv == FlopsConvention::kNarayananEq3 ? "; the FLOPs count includes it" : ""));
  } else {
    return fmt::format("recompute '{}' not understood", recompute_raw);
  }
  const bool pre_sp = Has(src, "2104.04473") || Has(src, "gpt-3-example");  // before SP existed (2021)
  s.sequence_parallel = s.tp > 1 && !Has(rc, "no sequence parallel") && !pre_sp;
  if (Has(rc, "sequence parallel") || Has(rc, "+ sp")) s.sequence_parallel = !Has(rc, "no sequence parallel");

  // ZeRO / distributed optimizer.
  if (!zero_raw.empty()) {
    int z = -1;
    std::from_chars(zero_raw.data(), zero_raw.data() + zero_raw.size(), z);
    if (z < 0 || z > 3) return fmt::format("zero_stage '{}' not understood", zero_raw);
    s.zero_stage = z;
  } else if (Has(notes, "megatron-fsdp") || Has(notes, "fsdp2")) {
    s.zero_stage = 3;
    k.assumptions.push_back("ZeRO-3 (Megatron-FSDP / FSDP2 shard weights, gradients and optimizer state)");
  } else if (Has(notes, "overlap-param-gather") || Has(notes, "distributed optimizer") || Has(src, "nvidia/nemo:") ||
             Has(src, "megatron-bridge")) {
    s.zero_stage = 1;
    k.assumptions.push_back("distributed optimizer (implied by --overlap-param-gather / NeMo default)");
  }
  s.overlap_grad_reduce = !(Has(notes, "ddp=local") || Has(notes, "ddp=torch") || Has(notes, "no dp grad") ||
                            Has(src, "2104.04473") || Has(src, "gpt-3-example"));
  s.overlap_tp_comm = Has(notes, "tp-comm-overlap");
  if (s.ep > 1 && Has(src, "megatron-bridge")) {
    s.overlap_ep_comm = true;
    k.assumptions.push_back("EP all-to-all overlapped with another micro-batch's compute (Megatron-Bridge MoE "
                            "recipes, --overlap-moe-expert-parallel-comm)");
    if (s.tp * s.cp * s.ep > k.gpu.nvlink_domain) {
      s.ep_dedup = true;
      k.assumptions.push_back("flex dispatcher (DeepEP/HybridEP) for an EP group wider than the NVLink domain");
    }
  }
  if (s.zero_stage == 3 && s.pp > 1 && Has(notes, "fsdp2")) {
    if (auto ga = NoteNumber(notes, R"((?:^|[ ;])ga=([0-9]+))"); ga && *ga >= 1 && *ga <= s.grad_accum) {
      s.zero3_rounds = static_cast<int>(*ga);
      k.assumptions.push_back(fmt::format("FSDP2 with PP keeps weights gathered through a schedule's micro-batches "
                                          "(no reshard after forward): gathered and reduce-scattered once per "
                                          "accumulation round, {} per step (GA={})",
                                          s.zero3_rounds, s.zero3_rounds));
    }
  }
  if (m.layers % s.pp != 0) {
    if (!SplitLayers(m.layers, s.pp, s.first_stage_layers, s.last_stage_layers)) {
      return fmt::format("pp {} does not divide {} layers and no first/last-stage split fits", s.pp, m.layers);
    }
    k.assumptions.push_back(fmt::format("uneven pipeline split: first/last stage {}/{} layers (not stated)",
                                        s.first_stage_layers, s.last_stage_layers));
  }
  if (auto v = ValidateStrategy(m, s, k.gpus); !v) return v.error().message;
  k.strategy = s;

  // Measured throughput in the row's convention.
  if (tflops) {
    k.measured_tflops = *tflops;
  } else if (mfu) {
    k.measured_tflops = *mfu / 100.0 * k.gpu.PeakFlops(prec).value_or(0) / 1e12;
    k.assumptions.push_back("measured TFLOP/s = MFU x peak");
  } else if (auto it = NoteNumber(notes, R"(iteration time ([0-9.]+) s)")) {
    k.measured_tflops = FlopsPerToken(m, m.seq_len, conv) * m.global_batch * m.seq_len / *it / k.gpus / 1e12;
    k.assumptions.push_back(fmt::format("measured TFLOP/s from the iteration time {} s", *it));
  } else {
    return std::string("no measured throughput (neither TFLOP/s, MFU nor iteration time)");
  }
  return std::string();
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::string_view SplitName(Split s) { return s == Split::kCalibration ? "calibration" : "validation"; }

Result<Split> ParseSplit(std::string_view s) {
  const std::string l = AsciiLower(s);
  if (l == "calibration") return Split::kCalibration;
  if (l == "validation" || l == "held-out") return Split::kValidation;
  return MakeError(ErrorCode::kInvalidArgument, "split '{}': use calibration or validation", s);
}

Result<std::vector<SplitRule>> LoadSplitRules(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(CsvTable t, CsvTable::ReadFile(path));
  size_t col[5];
  const char* names[5] = {"file", "source", "model", "notes", "split"};
  for (int i = 0; i < 5; ++i) {
    TIDAL_ASSIGN_OR_RETURN(col[i], t.RequireColumn(names[i]));
  }
  std::vector<SplitRule> rules;
  for (const auto& r : t.rows()) {
    SplitRule rule;
    rule.line = r.line();
    std::string* fields[4] = {&rule.file, &rule.source, &rule.model, &rule.notes};
    for (int i = 0; i < 4; ++i) {
      TIDAL_ASSIGN_OR_RETURN(std::string_view v, r.Str(col[i]));
      *fields[i] = AsciiLower(v);
    }
    TIDAL_ASSIGN_OR_RETURN(std::string_view split, r.Str(col[4]));
    auto sp = ParseSplit(split);
    if (!sp) return MakeError(ErrorCode::kParse, "{}: {}", r.Where(col[4]), sp.error().message);
    rule.split = *sp;
    if (rule.file.empty() && rule.source.empty() && rule.model.empty() && rule.notes.empty()) {
      return MakeError(ErrorCode::kParse, "{}: a rule needs at least one of file, source, model, notes (it would match "
                       "every row)", r.Where(col[0]));
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

Result<std::vector<CalibrationCase>> LoadCalibrationCases(const std::string& path,
                                                          const std::vector<SplitRule>& rules,
                                                          const std::vector<RecipeRule>& recipes) {
  TIDAL_ASSIGN_OR_RETURN(CsvTable t, CsvTable::ReadFile(path));
  TIDAL_ASSIGN_OR_RETURN(Columns c, FindColumns(t));
  const std::optional<size_t> split_col = t.FindColumn("split");
  std::vector<CalibrationCase> out;
  for (const auto& r : t.rows()) {
    CalibrationCase k;
    k.file = path;
    TIDAL_ASSIGN_OR_RETURN(std::string reason, FillCase(r, c, k));
    k.usable = reason.empty();
    k.skip_reason = std::move(reason);
    if (k.line == 0) k.line = r.line();
    TIDAL_ASSIGN_OR_RETURN(std::string_view notes, r.Str(c.notes));
    const std::string notes_lower = AsciiLower(notes);
    if (k.usable) ApplyRecipe(recipes, notes_lower, k);
    if (split_col && !r.Empty(*split_col)) {
      TIDAL_ASSIGN_OR_RETURN(std::string_view v, r.Str(*split_col));
      auto sp = ParseSplit(v);
      if (!sp) return MakeError(ErrorCode::kParse, "{}: {}", r.Where(*split_col), sp.error().message);
      k.split = *sp;
    } else {
      k.split = RuleSplit(rules, k, notes_lower);
    }
    out.push_back(std::move(k));
  }
  return out;
}

ErrorStats StatsOf(std::vector<double> v) {
  ErrorStats st;
  st.rows = static_cast<int>(v.size());
  if (v.empty()) return st;
  std::sort(v.begin(), v.end());
  st.median_abs_error_pct = Median(v);
  // Nearest rank: the smallest value at or above 90% of the rows.
  const size_t rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(v.size())));
  st.p90_abs_error_pct = v[std::max<size_t>(rank, 1) - 1];
  st.max_abs_error_pct = v.back();
  return st;
}

double PredictCaseTflops(const CalibrationCase& c, const Calibration& cal) {
  const Placement pl = DefaultPlacement(c.gpu, c.gpus);
  const Prediction p = PredictUnchecked(c.spec, c.gpu, pl, c.strategy, cal);
  const double flops = FlopsPerToken(c.spec, c.spec.seq_len, c.convention) * c.spec.global_batch * c.spec.seq_len;
  return flops / p.step_time_s / c.gpus / 1e12;
}

ValidationReport Validate(const std::vector<CalibrationCase>& cases, const Calibration& cal,
                          std::optional<Split> only) {
  ValidationReport rep;
  std::vector<double> errs;
  std::vector<std::pair<std::string, std::vector<double>>> groups;
  for (const auto& c : cases) {
    if (only && c.split != *only) continue;
    if (!c.usable) {
      rep.skipped.push_back({c.file, c.line, c.model, c.skip_reason});
      continue;
    }
    ValidationRow r;
    r.file = c.file;
    r.line = c.line;
    r.model = c.model;
    r.gpus = c.gpus;
    r.gpu_type = c.gpu_type;
    r.generation = c.gpu.generation;
    r.precision = std::string(PrecisionName(c.strategy.precision));
    r.family = c.spec.IsMoe() ? "moe" : "dense";
    r.split = c.split;
    r.predicted_tflops = PredictCaseTflops(c, cal);
    r.measured_tflops = c.measured_tflops;
    r.error_pct = (r.predicted_tflops - r.measured_tflops) / r.measured_tflops * 100.0;
    r.convention = std::string(FlopsConventionName(c.convention));
    r.assumptions = c.assumptions;
    const Strategy& s = c.strategy;
    r.layout = fmt::format("tp={} pp={} dp={} cp={} ep={} vpp={} mb={} ga={} zero={} recompute={}{} {}", s.tp, s.pp,
                           s.dp, s.cp, s.ep, s.vpp, s.micro_batch, s.grad_accum, s.zero_stage,
                           RecomputeName(s.recompute), s.sequence_parallel ? " sp" : "", PrecisionName(s.precision));
    if (s.cuda_graphs != CudaGraphs::kNone) r.layout += fmt::format(" graphs={}", CudaGraphsName(s.cuda_graphs));
    if (s.fp8_attention) r.layout += " fp8-attn";
    if (s.fused_expert_mlp) r.layout += " fused-mlp";
    if (s.ep > 1 && s.overlap_ep_comm) r.layout += " ep-overlap";
    errs.push_back(std::abs(r.error_pct));
    const std::string key = fmt::format("{}/{}/{}/{}", SplitName(r.split), r.generation, r.precision, r.family);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
    it->second.push_back(std::abs(r.error_pct));
    rep.rows.push_back(std::move(r));
  }
  rep.rows_used = static_cast<int>(rep.rows.size());
  rep.rows_skipped = static_cast<int>(rep.skipped.size());
  const ErrorStats all = StatsOf(errs);
  rep.median_abs_error_pct = all.median_abs_error_pct;
  rep.p90_abs_error_pct = all.p90_abs_error_pct;
  rep.max_abs_error_pct = all.max_abs_error_pct;
  std::sort(groups.begin(), groups.end());
  for (auto& [key, v] : groups) rep.groups.emplace_back(key, StatsOf(std::move(v)));
  return rep;
}

Calibration FitCalibration(const std::vector<CalibrationCase>& cases, const Calibration& start) {
  std::vector<const CalibrationCase*> fit_rows;
  for (const auto& c : cases) {
    if (c.usable && c.split == Split::kCalibration) fit_rows.push_back(&c);
  }
  Calibration cal = start;
  auto loss = [&](const Calibration& k) {
    double l = 0;
    for (const auto* c : fit_rows) {
      const double e = std::log(PredictCaseTflops(*c, k) / c->measured_tflops);
      l += e * e;
    }
    return l;
  };
  // The parameters: one GEMM fraction per (generation, GEMM format)
  // that has calibration rows, the collective efficiency, and the fixed MoE
  // layer cost when MoE rows calibrate.
  std::vector<std::pair<std::string, std::string>> keys;
  bool moe = false, moe_graphed = false, moe_host = false;
  for (const auto* c : fit_rows) {
    std::pair<std::string, std::string> key{c->gpu.generation, std::string(GemmFormat(c->strategy.precision))};
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    moe = moe || c->spec.IsMoe();
    const bool graphed = c->strategy.cuda_graphs == CudaGraphs::kFull;
    moe_graphed = moe_graphed || (c->spec.IsMoe() && graphed);
    moe_host = moe_host || (c->spec.IsMoe() && !graphed);
  }
  std::sort(keys.begin(), keys.end());
  for (const auto& [g, b] : keys) cal.SetGemmFraction(g, b, cal.GemmFraction(g, b));
  auto golden = [&](auto set, double lo, double hi) {
    const double phi = (std::sqrt(5.0) - 1) / 2;
    double a = lo, b = hi;
    for (int i = 0; i < 40; ++i) {
      const double x1 = b - phi * (b - a), x2 = a + phi * (b - a);
      Calibration c1 = cal, c2 = cal;
      set(c1, x1);
      set(c2, x2);
      if (loss(c1) < loss(c2)) {
        b = x2;
      } else {
        a = x1;
      }
    }
    set(cal, (a + b) / 2);
  };
  for (int sweep = 0; sweep < 4; ++sweep) {
    for (const auto& [g, b] : keys) {
      // The physical range of a fraction of peak.
      golden([&, g = g, b = b](Calibration& c, double v) { c.SetGemmFraction(g, b, v); }, 0.15, 1.0);
    }
    golden([](Calibration& c, double v) { c.collective_efficiency = v; }, 0.1, 1.0);
    // Fixed costs per MoE layer and micro-batch between none and 20 ms; the
    // host's share only tells apart when rows with and without full-iteration
    // CUDA graphs calibrate.
    if (moe) golden([](Calibration& c, double v) { c.moe_layer_overhead_us = v; }, 0.0, 20000.0);
    if (moe_graphed && moe_host) golden([](Calibration& c, double v) { c.moe_host_overhead_us = v; }, 0.0, 20000.0);
  }
  return cal;
}

}  // namespace tidal::planner
