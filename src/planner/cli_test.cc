// End-to-end: the `tidal plan` and `tidal mfu` commands as a user runs them,
// checking the JSON contract of the issue and that bad input gives a located
// error and exit status 2, never a crash.
#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <sys/wait.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

const std::string kShared = TIDAL_SHARED_DIR;
const std::string kSource = TIDAL_SOURCE_DIR;

struct Output {
  int status = -1;
  std::string out;
};

Output Tidal(const std::string& args) {
  Output r;
  const std::string cmd = std::string(TIDAL_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::set<std::string> Keys(const nlohmann::json& j) {
  std::set<std::string> k;
  for (auto it = j.begin(); it != j.end(); ++it) k.insert(it.key());
  return k;
}

TEST(PlanCliTest, ValidateJsonHasExactlyTheIssueKeys) {
  if (!std::filesystem::exists(kShared + "/planner/calibration.csv")) GTEST_SKIP() << "shared data not mounted";
  const std::string split = std::string(TIDAL_SOURCE_DIR) + "/data/planner/split.csv";
  const Output r = Tidal("plan --validate " + kShared + "/planner/calibration.csv " + kShared +
                         "/planner/blackwell-moe.csv --split-file " + split + " --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(Keys(j), (std::set<std::string>{"rows", "skipped", "groups", "summary"}));
  ASSERT_FALSE(j["rows"].empty());
  std::set<std::string> files;
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(Keys(row), (std::set<std::string>{"file", "line", "model", "gpus", "gpu_type", "generation", "precision",
                                                 "family", "split", "convention", "layout", "assumptions",
                                                 "predicted_tflops", "measured_tflops", "error_pct"}));
    files.insert(std::filesystem::path(row["file"].get<std::string>()).filename().string());
  }
  EXPECT_EQ(files, (std::set<std::string>{"calibration.csv", "blackwell-moe.csv"}));
  for (const auto& s : j["skipped"]) EXPECT_EQ(Keys(s), (std::set<std::string>{"file", "line", "model", "reason"}));
  EXPECT_EQ(Keys(j["summary"]), (std::set<std::string>{"median_abs_error_pct", "p90_abs_error_pct",
                                                        "max_abs_error_pct", "rows_used", "rows_skipped"}));
  // Every row of both files is either modelled or skipped with its reason.
  EXPECT_EQ(j["summary"]["rows_used"].get<int>() + j["summary"]["rows_skipped"].get<int>(), 77 + 114);
  EXPECT_GE(j["summary"]["rows_used"].get<int>(), (77 + 114) * 3 / 4);  // the issue: at least 75% modelled
  EXPECT_TRUE(j["groups"].contains("calibration/blackwell/nvfp4/dense"));
  EXPECT_TRUE(j["groups"].contains("validation/blackwell/mxfp8/moe"));
  const Output cal = Tidal("plan --validate " + kShared + "/planner/calibration.csv " + kShared +
                           "/planner/blackwell-moe.csv --split-file " + split + " --split calibration --json");
  ASSERT_EQ(cal.status, 0);
  const auto c = nlohmann::json::parse(cal.out);
  EXPECT_LE(c["summary"]["median_abs_error_pct"].get<double>(), 5.0);
  for (const auto& row : c["rows"]) EXPECT_EQ(row["split"], "calibration");
}

TEST(PlanCliTest, SplitFileErrorsNameTheLine) {
  const std::string dir = ::testing::TempDir();
  const std::string bad = dir + "/split_bad.csv";
  FILE* f = std::fopen(bad.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("file,source,model,notes,split\ncalibration.csv,nemo,,,maybe\n", f);
  std::fclose(f);
  const Output r = Tidal("plan --validate " + kShared + "/planner/calibration.csv --split-file " + bad);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("split_bad.csv:2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("'maybe'"), std::string::npos) << r.out;
  // Rules that name none of the file's rows leave nothing to calibrate on: an error, not a 0% median.
  const std::string other = dir + "/split_other.csv";
  f = std::fopen(other.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("file,source,model,notes,split\nsomething-else.csv,,,,calibration\n", f);
  std::fclose(f);
  const Output none = Tidal("plan --validate " + kShared + "/planner/calibration.csv --split-file " + other +
                            " --split calibration");
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.out.find("no calibration rows"), std::string::npos) << none.out;
  const Output missing = Tidal("plan --validate " + kShared + "/planner/calibration.csv --split-file " + dir + "/none.csv");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.out.find("none.csv"), std::string::npos) << missing.out;
}

// The recipe file: a bad one is a located error; `none` predicts with the
// framework defaults, which the shipped recipes move on the rows they name.
TEST(PlanCliTest, RecipeFileErrorsNameTheLineAndNoneMeansDefaults) {
  if (!std::filesystem::exists(kShared + "/planner/blackwell-moe.csv")) GTEST_SKIP() << "shared data not mounted";
  const std::string dir = ::testing::TempDir();
  const std::string bad = dir + "/recipes_bad.csv";
  FILE* f = std::fopen(bad.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("file,model,container,system,precision,cuda_graphs,fp8_attention,ep_overlap,dispatcher,"
             "fused_grouped_mlp,source\nblackwell-moe.csv,,26.06,,,sometimes,,,,,x\n", f);
  std::fclose(f);
  const std::string csv = kShared + "/planner/blackwell-moe.csv";
  const Output r = Tidal("plan --validate " + csv + " --recipe-file " + bad);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("recipes_bad.csv:2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("none, partial or full"), std::string::npos) << r.out;
  const Output missing = Tidal("plan --validate " + csv + " --recipe-file " + dir + "/no_recipes.csv");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.out.find("no_recipes.csv"), std::string::npos) << missing.out;
  const Output shipped = Tidal("plan --validate " + csv + " --recipe-file " + kSource + "/data/planner/recipes.csv --json");
  const Output defaults = Tidal("plan --validate " + csv + " --recipe-file none --json");
  ASSERT_EQ(shipped.status, 0) << shipped.out;
  ASSERT_EQ(defaults.status, 0) << defaults.out;
  const auto js = nlohmann::json::parse(shipped.out), jd = nlohmann::json::parse(defaults.out);
  ASSERT_EQ(js["rows"].size(), jd["rows"].size());
  int moved = 0, cited = 0;
  for (size_t i = 0; i < js["rows"].size(); ++i) {
    if (js["rows"][i]["predicted_tflops"] != jd["rows"][i]["predicted_tflops"]) ++moved;
    for (const auto& a : js["rows"][i]["assumptions"]) cited += a.get<std::string>().starts_with("recipe (recipes.csv:");
    for (const auto& a : jd["rows"][i]["assumptions"]) EXPECT_FALSE(a.get<std::string>().starts_with("recipe ("));
  }
  EXPECT_GE(moved, 40);  // the MoE rows whose recipes differ from the defaults
  EXPECT_GE(cited, 90);  // every Megatron-Bridge row the file names
}

// A user states what their framework does; the plan predicts and emits it.
TEST(PlanCliTest, RecipeKnobsAreTakenAndEmitted) {
  const std::string base = "plan --model qwen3-30b-a3b --gpus 64 --gpu gb200 --precision mxfp8 --top 1 ";
  const Output r = Tidal(base + "--cuda-graphs full --fp8-attention --fused-expert-mlp --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["plans"][0]["cuda_graphs"], "full");
  EXPECT_EQ(j["plans"][0]["fp8_attention"], true);
  EXPECT_EQ(j["plans"][0]["fused_expert_mlp"], true);
  std::string args;
  for (const auto& a : j["megatron_args"]) args += a.get<std::string>() + " ";
  EXPECT_NE(args.find("--cuda-graph-impl full_iteration"), std::string::npos) << args;
  EXPECT_NE(args.find("--use-transformer-engine-op-fuser"), std::string::npos) << args;
  const Output plain = Tidal(base + "--json");
  ASSERT_EQ(plain.status, 0) << plain.out;
  const auto p = nlohmann::json::parse(plain.out);
  EXPECT_EQ(p["plans"][0]["cuda_graphs"], "none");
  EXPECT_GT(j["plans"][0]["tflops_per_gpu"].get<double>(), p["plans"][0]["tflops_per_gpu"].get<double>());
  const Output text = Tidal(base + "--cuda-graphs partial --fused-expert-mlp");
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("recipe: CUDA graphs partial, fused expert MLP\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("--cuda-graph-impl transformer_engine"), std::string::npos) << text.out;
  EXPECT_EQ(plain.out.find("recipe:"), std::string::npos);
  const Output bad = Tidal(base + "--cuda-graphs sometimes");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.out.find("--cuda-graphs: unknown CUDA graphs 'sometimes': use none, partial or full"), std::string::npos)
      << bad.out;
  const Output no_fp8 = Tidal("plan --model llama3-8b --gpus 8 --gpu a100 --fp8-attention");
  EXPECT_EQ(no_fp8.status, 2);
  EXPECT_NE(no_fp8.out.find("no FP8 tensor cores"), std::string::npos) << no_fp8.out;
}

TEST(PlanCliTest, PlanJsonHasTheIssueFieldsAndLaunchConfigs) {
  const Output r = Tidal("plan --model llama3-70b --gpus 512 --gpu h100 --top 5 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["plans"].size(), 5u);
  for (const auto& p : j["plans"]) {
    for (const char* k : {"tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "grad_accum", "zero_stage", "recompute",
                          "step_time_s", "tflops_per_gpu", "mfu", "memory_gib", "comm_share"}) {
      EXPECT_TRUE(p.contains(k)) << k;
    }
  }
  EXPECT_FALSE(j["megatron_args"].empty());
  EXPECT_EQ(j["deepspeed_config"]["train_batch_size"].get<int>(), 1024);
  const Output text = Tidal("plan --model llama3-70b --gpus 512 --gpu h100 --allreduce-saturation 0.4");
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("--tensor-model-parallel-size"), std::string::npos);
  EXPECT_NE(text.out.find("gradient accumulation at all-reduce saturation 0.40"), std::string::npos);
  const Output file = Tidal("plan --model " + kSource + "/tests/planner/example_moe.yaml --gpus 64 --gpu h100 --cluster " +
                         kSource + "/tests/planner/cluster_gb200.yaml");
  EXPECT_EQ(file.status, 0) << file.out;
}

TEST(PlanCliTest, BadInputIsALocatedErrorNotACrash) {
  Output r = Tidal("plan --model no-such-model --gpus 8");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("unknown model 'no-such-model'"), std::string::npos) << r.out;
  r = Tidal("plan --model " + kSource + "/tests/planner/bad_model.yaml --gpus 8");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("bad_model.yaml:3"), std::string::npos) << r.out;
  r = Tidal("plan --validate /nonexistent.csv");
  EXPECT_EQ(r.status, 2);
  r = Tidal("plan --model llama3-405b --gpus 8 --gpu a100");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("no strategy"), std::string::npos) << r.out;
  r = Tidal("plan --model llama3-8b --gpus 8 --cluster domain=x");
  EXPECT_EQ(r.status, 2);
  r = Tidal("mfu");
  EXPECT_EQ(r.status, 2);
  r = Tidal("mfu --log /nonexistent.log");
  EXPECT_EQ(r.status, 2);
}

TEST(MfuCliTest, LogAndDcgmFiguresNameTheirMethod) {
  if (!std::filesystem::exists(kShared + "/fixtures")) GTEST_SKIP() << "shared fixtures not mounted";
  Output r = Tidal("mfu --log " + kShared +
                "/fixtures/megatron-logs/issue-megatron-lm-756-mixtral-h100-2024-04-iterations.part4.log "
                "--model mixtral-8x7b --seq-len 2048 --gpu h100 --gpus 16 --tp 4 --pp 1 --global-batch 128 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["mfu"]["method"].get<std::string>().starts_with("TFLOP/s per GPU /"));
  EXPECT_TRUE(j["comm_share"]["method"].get<std::string>().starts_with("fallback step 1"));
  r = Tidal("mfu --dcgm " + kShared + "/fixtures/dcgm-exporter/cloud-native-docs-a100-mig-sample.prom " + kShared +
            "/fixtures/dcgm-exporter/issue-dcgm-exporter-pr736-mixed-models-lowercase-hostname.prom --gpu a100 "
            "--gpus 64 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["comm_share"]["method"].get<std::string>().starts_with("fallback step 3"));
  EXPECT_TRUE(j["tensor_active"].is_object());
}

}  // namespace
