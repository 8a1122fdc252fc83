// Bad input never crashes a parser: random text, and real fixture lines with
// random bytes flipped, either parse or give an error naming the source.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "telemetry/dcgm.h"
#include "telemetry/megatron_log.h"

namespace tidal::telemetry {
namespace {

const char* kLogLines[] = {
    " [2024-04-06 02:58:18] iteration       29/     100 | consumed samples:         3712 | elapsed time per "
    "iteration (ms): 5912.1 | throughput per GPU (TFLOP/s/GPU): 220.9 | global batch size:   128 |",
    "time (ms) | forward-compute: 193.77 | backward-compute: 73.02 | backward-params-all-reduce: 20.10",
    "using world size: 16, data-parallel size: 4, context-parallel size: 1 tensor-model-parallel size: 4, "
    "pipeline-model-parallel size: 1 ",
    "  num_layers ...................................... 56",
    "Epoch 0:   1%|          | 795/77225 [9:07:58<878:01:48, 41.36s/it, loss=3.1]",
    "[2022-03-11 02:06:58,985] [INFO] [timer.py:189:stop] 0/40, SamplesPerSec=83.48609168106144, MemAllocated=0.26GB",
};
const char* kPromLines[] = {
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu=\"0\",UUID=\"GPU-3\",device=\"nvidia0\",Hostname=\"h\"} 0.929260",
    "# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).",
    "DCGM_FI_DEV_MEMORY_TEMP{gpu=\"0\", UUID=\"GPU-604a\"} 9223372036854775794",
    "dcgm_fi_prof_gr_engine_active{gpu=\"0\",uuid=\"GPU-ed13\",container_name=\"\"} 0.000000",
};

std::string Mutate(std::string s, const std::vector<std::pair<size_t, char>>& edits) {
  for (auto [pos, c] : edits) {
    if (s.empty()) break;
    s[pos % s.size()] = c;
  }
  return s;
}

RC_GTEST_PROP(ParserFuzz, MegatronLogNeverCrashes, (const std::string& noise)) {
  auto r = ParseMegatronLog(noise, "fuzz.log");
  if (!r) RC_ASSERT(r.error().message.find("fuzz.log:") != std::string::npos);
}

RC_GTEST_PROP(ParserFuzz, MutatedLogLinesNeverCrash, (const std::vector<std::pair<size_t, char>>& edits)) {
  const std::string line = kLogLines[*rc::gen::inRange<size_t>(0, std::size(kLogLines))];
  auto r = ParseMegatronLog(Mutate(line, edits) + "\n" + line, "fuzz.log");
  if (!r) RC_ASSERT(r.error().message.find("fuzz.log:") != std::string::npos);
}

RC_GTEST_PROP(ParserFuzz, DcgmNeverCrashes, (const std::string& noise)) {
  auto r = ParseDcgmText(noise, "fuzz.prom");
  if (!r) RC_ASSERT(r.error().message.find("fuzz.prom:") != std::string::npos);
}

RC_GTEST_PROP(ParserFuzz, MutatedPromLinesNeverCrash, (const std::vector<std::pair<size_t, char>>& edits)) {
  const std::string line = kPromLines[*rc::gen::inRange<size_t>(0, std::size(kPromLines))];
  auto r = ParseDcgmText(Mutate(line, edits), "fuzz.prom");
  if (!r) RC_ASSERT(r.error().message.find("fuzz.prom:") != std::string::npos);
}

TEST(ParserFuzz, HugeNumbersAndLongLines) {
  EXPECT_FALSE(ParseMegatronLog(" iteration 99999999999999999999999/10 | elapsed time per iteration (ms): 1 |", "x"));
  EXPECT_TRUE(ParseMegatronLog(std::string(1 << 20, 'a') + "\n iteration 1/2 | elapsed time per iteration (ms): 5 |",
                               "long.log"));
  auto d = ParseDcgmText("DCGM_FI_DEV_FB_FREE{gpu=\"0\"} 1e999\n", "big.prom");
  ASSERT_TRUE(d);
  EXPECT_FALSE((*d)[0].value);
}

}  // namespace
}  // namespace tidal::telemetry
