#include "workload/traces/philly.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tidal::traces {
namespace {

namespace fs = std::filesystem;
const fs::path kPhilly = fs::path(TIDAL_SHARED_DIR) / "traces/philly";

std::string WriteTemp(const std::string& name, const std::string& text) {
  fs::path p = fs::temp_directory_path() / ("tidal_test_philly_" + name);
  std::ofstream(p) << text;
  return p.string();
}

TEST(PhillyReaderTest, ParsesTimestamps) {
  EXPECT_EQ(*ParseUtcTimestamp("1970-01-01 00:00:00"), 0);
  EXPECT_EQ(*ParseUtcTimestamp("2017-10-09 07:01:55"), 1507532515);
  EXPECT_FALSE(ParseUtcTimestamp("2017-13-09 07:01:55").has_value());
  EXPECT_FALSE(ParseUtcTimestamp("2017-10-09").has_value());
  EXPECT_FALSE(ParseUtcTimestamp("2017-02-30 00:00:00").has_value());
}

TEST(PhillyReaderTest, ReadsTheWholeJobList) {
  if (!fs::exists(kPhilly)) GTEST_SKIP() << "shared traces not present";
  auto r = ReadPhillyJobs((kPhilly / "pollux_philly_jobs.csv").string());
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->jobs.size(), 82247u);
  EXPECT_EQ(r->epoch_s, *ParseUtcTimestamp("2017-09-04 10:30:41"));
  int64_t max_gpus = 0, min_submit = INT64_MAX;
  for (const auto& j : r->jobs) {
    max_gpus = std::max<int64_t>(max_gpus, j.num_gpu);
    min_submit = std::min(min_submit, *j.submit_time_s);
    ASSERT_TRUE(j.duration_s.has_value());
  }
  EXPECT_EQ(max_gpus, 128);
  EXPECT_EQ(min_submit, 0);
  EXPECT_EQ(r->jobs[0].duration_s, 66);
  EXPECT_EQ(r->jobs[0].group, "11cb48");
}

TEST(PhillyReaderTest, ReadsBothMachineLists) {
  if (!fs::exists(kPhilly)) GTEST_SKIP() << "shared traces not present";
  auto orig = ReadPhillyMachines((kPhilly / "machine_list/cluster_machine_list.csv").string());
  ASSERT_TRUE(orig.has_value()) << orig.error().ToString();
  EXPECT_EQ(orig->size(), 552u);
  int64_t gpus = 0;
  for (const auto& n : *orig) gpus += n.gpu_count;
  EXPECT_EQ(gpus, 2490);
  EXPECT_EQ((*orig)[0].gpu_model, "philly-12GB");
  auto revised = ReadPhillyMachines((kPhilly / "machine_list/revised_machine_list.csv").string());
  ASSERT_TRUE(revised.has_value()) << revised.error().ToString();
  gpus = 0;
  for (const auto& n : *revised) gpus += n.gpu_count;
  EXPECT_EQ(gpus, 3205);
}

TEST(PhillyReaderTest, BadRowsGiveLocatedErrors) {
  const std::string h = "timestamp,duration,num_gpus,gpu_time,cluster\n";
  auto frac = ReadPhillyJobs(WriteTemp("frac", h + "2017-10-09 07:01:55,66.5,1,66.5,vc\n"));
  ASSERT_FALSE(frac.has_value());
  EXPECT_NE(frac.error().message.find(":2: column 'duration'"), std::string::npos) << frac.error().message;
  auto zero = ReadPhillyJobs(WriteTemp("zero", h + "2017-10-09 07:01:55,66.0,0,0,vc\n"));
  ASSERT_FALSE(zero.has_value());
  EXPECT_NE(zero.error().message.find("column 'num_gpus'"), std::string::npos);
  auto ts = ReadPhillyJobs(WriteTemp("ts", h + "yesterday,66.0,1,66.0,vc\n"));
  ASSERT_FALSE(ts.has_value());
  EXPECT_NE(ts.error().message.find("column 'timestamp'"), std::string::npos);
  auto trunc = ReadPhillyJobs(WriteTemp("trunc", h + "2017-10-09 07:01:55,66.0\n"));
  ASSERT_FALSE(trunc.has_value());
  auto mem = ReadPhillyMachines(WriteTemp("mem", "machineId, number of GPUs, single GPU mem\nm0,2, lots\n"));
  ASSERT_FALSE(mem.has_value());
  EXPECT_NE(mem.error().message.find("not a GPU memory size"), std::string::npos);
}

}  // namespace
}  // namespace tidal::traces
