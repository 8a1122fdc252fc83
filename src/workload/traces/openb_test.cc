#include "workload/traces/openb.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tidal::traces {
namespace {

namespace fs = std::filesystem;
const fs::path kOpenb = fs::path(TIDAL_SHARED_DIR) / "traces/alibaba-gpu-v2023-openb";

std::string WriteTemp(const std::string& name, const std::string& text) {
  fs::path p = fs::temp_directory_path() / ("tidal_test_" + name);
  std::ofstream(p) << text;
  return p.string();
}

TEST(OpenbReaderTest, ReadsNodeListAsShipped) {
  if (!fs::exists(kOpenb)) GTEST_SKIP() << "shared traces not present";
  auto all = ReadOpenbNodes((kOpenb / "node_list/openb_node_list_all_node.csv").string());
  ASSERT_TRUE(all.has_value()) << all.error().ToString();
  EXPECT_EQ(all->size(), 1523u);
  auto gpu = ReadOpenbNodes((kOpenb / "node_list/openb_node_list_all_node.csv").string(), {.gpu_nodes_only = true});
  ASSERT_TRUE(gpu.has_value());
  EXPECT_EQ(gpu->size(), 1213u);
  int64_t gpus = 0;
  for (const auto& n : *gpu) gpus += n.gpu_count;
  EXPECT_EQ(gpus, 6212);
}

TEST(OpenbReaderTest, ReadsEveryPodListVariant) {
  if (!fs::exists(kOpenb)) GTEST_SKIP() << "shared traces not present";
  int files = 0;
  for (const auto& e : fs::directory_iterator(kOpenb / "pod_list")) {
    auto pods = ReadOpenbPods(e.path().string());
    ASSERT_TRUE(pods.has_value()) << e.path() << ": " << pods.error().ToString();
    EXPECT_GT(pods->size(), 7000u) << e.path();
    ++files;
  }
  EXPECT_EQ(files, 17);
  auto def = ReadOpenbPods((kOpenb / "pod_list/openb_pod_list_default.csv").string());
  ASSERT_TRUE(def.has_value());
  ASSERT_EQ(def->size(), 8152u);
  int sharing = 0, cpu_only = 0, eight = 0;
  for (const auto& p : *def) {
    sharing += p.IsGpuSharing();
    cpu_only += p.IsCpuOnly();
    eight += p.num_gpu == 8;
  }
  EXPECT_EQ(sharing, 3078);
  EXPECT_EQ(cpu_only, 1088);
  EXPECT_EQ(eight, 44);
  EXPECT_EQ((*def)[1].name, "openb-pod-0001");
  EXPECT_EQ((*def)[1].gpu_milli, 460);
  EXPECT_EQ((*def)[1].submit_time_s, 427061);
  EXPECT_EQ((*def)[1].qos, Qos::kLatencySensitive);
  auto spec = ReadOpenbPods((kOpenb / "pod_list/openb_pod_list_gpuspec05.csv").string());
  ASSERT_TRUE(spec.has_value());
  int constrained = 0;
  for (const auto& p : *spec) constrained += !p.gpu_spec.empty();
  EXPECT_GT(constrained, 300);
  auto multi = ReadOpenbPods((kOpenb / "pod_list/openb_pod_list_multigpu50.csv").string());
  ASSERT_TRUE(multi.has_value());
  EXPECT_FALSE((*multi)[0].submit_time_s.has_value());
}

struct BadCase {
  const char* what;
  const char* text;
  const char* expect;  // substring of the error
};

TEST(OpenbReaderTest, BadPodRowsGiveLocatedErrors) {
  const std::string header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";
  const BadCase cases[] = {
      {"truncated", "p0,1000,10,1,500,,LS,Running,0,5,0\np1,1000,10\n", ":3: expected 11 fields"},
      {"wrong_type", "p0,abc,10,1,500,,LS,Running,0,5,0\n", ":2: column 'cpu_milli': 'abc' is not an integer"},
      {"negative", "p0,1000,-10,1,500,,LS,Running,0,5,0\n", "column 'memory_mib': -10 is out of range"},
      {"huge", "p0,99999999999999999999,10,1,500,,LS,Running,0,5,0\n", "too large"},
      {"milli_over", "p0,1000,10,1,1500,,LS,Running,0,5,0\n", "column 'gpu_milli': 1500 is out of range"},
      {"multi_share", "p0,1000,10,2,500,,LS,Running,0,5,0\n", "only 1-GPU pods may share"},
      {"bad_qos", "p0,1000,10,1,500,,XX,Running,0,5,0\n", "unknown QoS 'XX'"},
      {"time_order", "p0,1000,10,1,500,,LS,Running,10,5,10\n", "deleted (5) before it is created (10)"},
      {"cpu_with_spec", "p0,1000,10,0,0,T4,LS,Running,0,5,0\n", "CPU-only pod 'p0' names GPU models"},
      {"empty_name", ",1000,10,1,500,,LS,Running,0,5,0\n", "empty pod name"},
      {"duplicate", "p0,1000,10,1,500,,LS,Running,0,5,0\np0,1000,10,1,500,,LS,Running,0,5,0\n", ":3: column 'name': pod 'p0' is listed twice (first at line 2)"},
  };
  for (const auto& c : cases) {
    auto r = ReadOpenbPods(WriteTemp(c.what, header + c.text));
    ASSERT_FALSE(r.has_value()) << c.what;
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos) << c.what << ": " << r.error().message;
    EXPECT_NE(r.error().message.find("tidal_test_"), std::string::npos) << "error must name the file";
  }
  auto empty = ReadOpenbPods(WriteTemp("empty", ""));
  ASSERT_FALSE(empty.has_value());
  auto header_only = ReadOpenbPods(WriteTemp("header_only", header));
  ASSERT_FALSE(header_only.has_value());
  EXPECT_NE(header_only.error().message.find("no pods"), std::string::npos);
  auto missing = ReadOpenbPods(WriteTemp("missing_col", "name,cpu_milli\np,1\n"));
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("missing column 'memory_mib'"), std::string::npos);
  auto nofile = ReadOpenbPods("/nonexistent/pods.csv");
  ASSERT_FALSE(nofile.has_value());
  EXPECT_EQ(nofile.error().code, ErrorCode::kIo);
}

TEST(OpenbReaderTest, BadNodeRowsGiveLocatedErrors) {
  const std::string header = "sn,cpu_milli,memory_mib,gpu,model\n";
  auto no_model = ReadOpenbNodes(WriteTemp("node_nomodel", header + "n0,1000,10,2,\n"));
  ASSERT_FALSE(no_model.has_value());
  EXPECT_NE(no_model.error().message.find(":2: column 'model'"), std::string::npos);
  auto dup = ReadOpenbNodes(WriteTemp("node_dup", header + "n0,1000,10,0,\nn0,1000,10,0,\n"));
  ASSERT_FALSE(dup.has_value());
  EXPECT_NE(dup.error().message.find("listed twice (first at line 2)"), std::string::npos) << dup.error().message;
  auto neg = ReadOpenbNodes(WriteTemp("node_neg", header + "n0,-1,10,0,\n"));
  ASSERT_FALSE(neg.has_value());
  auto cpu_only = ReadOpenbNodes(WriteTemp("node_cpu", header + "n0,1000,10,0,\n"), {.gpu_nodes_only = true});
  ASSERT_FALSE(cpu_only.has_value());
  EXPECT_NE(cpu_only.error().message.find("no nodes with GPUs"), std::string::npos);
}

}  // namespace
}  // namespace tidal::traces
