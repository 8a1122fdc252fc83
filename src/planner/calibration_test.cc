#include "planner/calibration.h"

#include <filesystem>

#include <gtest/gtest.h>

namespace tidal::planner {
namespace {

std::string CalibrationCsv() { return std::string(TIDAL_SHARED_DIR) + "/planner/calibration.csv"; }

#define SKIP_WITHOUT_SHARED()                                                             \
  if (!std::filesystem::exists(CalibrationCsv())) GTEST_SKIP() << "no " << CalibrationCsv() \
                                                               << " (shared data not mounted)"

void Print(const ValidationReport& rep) {
  for (const auto& r : rep.rows) {
    std::printf("  line %3d %-28s %5d %-10s %-9s pred %7.1f meas %7.1f err %+6.1f%%\n", r.line, r.model.c_str(), r.gpus,
                std::string(SplitName(r.split)).c_str(), r.convention.c_str(), r.predicted_tflops, r.measured_tflops,
                r.error_pct);
  }
  for (const auto& s : rep.skipped) std::printf("  skip %3d %-28s %s\n", s.line, s.model.c_str(), s.reason.c_str());
  std::printf("  median %.1f%% max %.1f%% used %d skipped %d\n", rep.median_abs_error_pct, rep.max_abs_error_pct,
              rep.rows_used, rep.rows_skipped);
}

TEST(CalibrationTest, MedianErrorOnCalibrationRowsAtMostTenPercent) {
  SKIP_WITHOUT_SHARED();
  auto cases = LoadCalibrationCases(CalibrationCsv());
  ASSERT_TRUE(cases) << cases.error().message;
  const ValidationReport rep = Validate(*cases, DefaultCalibration(), Split::kCalibration);
  Print(rep);
  EXPECT_GE(rep.rows_used, 20);
  EXPECT_LE(rep.median_abs_error_pct, 10.0);
}

TEST(CalibrationTest, HeldOutRowsReported) {
  SKIP_WITHOUT_SHARED();
  auto cases = LoadCalibrationCases(CalibrationCsv());
  ASSERT_TRUE(cases) << cases.error().message;
  const ValidationReport rep = Validate(*cases, DefaultCalibration(), Split::kHeldOut);
  Print(rep);
  EXPECT_GE(rep.rows_used, 25);
  // A regression alarm, not a fit target: nothing is tuned on these rows.
  EXPECT_LE(rep.median_abs_error_pct, 15.0);
}

TEST(CalibrationTest, RefitReproducesDefaults) {
  SKIP_WITHOUT_SHARED();
  auto cases = LoadCalibrationCases(CalibrationCsv());
  ASSERT_TRUE(cases) << cases.error().message;
  const Calibration def = DefaultCalibration();
  const Calibration fit = FitCalibration(*cases, def);
  for (const auto& e : fit.entries) {
    std::printf("  fitted %s %s: %.3f\n", e.gpu.c_str(), e.fp8 ? "fp8" : "bf16", e.gemm_fraction);
  }
  std::printf("  fitted collective efficiency %.3f\n", fit.collective_efficiency);
  const ValidationReport after = Validate(*cases, fit, Split::kCalibration);
  std::printf("  refit median %.1f%% max %.1f%%\n", after.median_abs_error_pct, after.max_abs_error_pct);
  for (const auto& e : def.entries) {
    EXPECT_NEAR(fit.GemmFraction(e.gpu, e.fp8), e.gemm_fraction, 0.03) << e.gpu << (e.fp8 ? " fp8" : " bf16");
  }
  EXPECT_NEAR(fit.collective_efficiency, def.collective_efficiency, 0.05);
}

}  // namespace
}  // namespace tidal::planner

namespace tidal::planner {
namespace {

// The published runs ran, so they fitted: the memory model must agree for
// (almost) all Megatron/NeMo layouts. FSDP2 rows are left out: whether they
// checkpointed activations is not stated.
TEST(CalibrationTest, PublishedLayoutsFitInMemory) {
  SKIP_WITHOUT_SHARED();
  auto cases = LoadCalibrationCases(CalibrationCsv());
  ASSERT_TRUE(cases) << cases.error().message;
  int total = 0, fit = 0;
  for (const auto& c : *cases) {
    if (!c.usable || c.strategy.zero_stage == 3) continue;
    ++total;
    const Prediction p = PredictUnchecked(c.spec, c.gpu, DefaultPlacement(c.gpu, c.gpus), c.strategy,
                                          DefaultCalibration());
    if (p.fits) {
      ++fit;
    } else {
      std::printf("  line %d %s: %.1f GiB > %.1f GiB\n", c.line, c.model.c_str(), p.memory_gib, c.gpu.hbm_gib);
    }
  }
  EXPECT_GE(total, 45);
  EXPECT_GE(fit, total * 95 / 100);
}

}  // namespace
}  // namespace tidal::planner
