// Inference demand: the request rate of a service over time, read from the
// real diurnal traces in shared/traces/inference (Azure LLM 2024 per-minute,
// Alibaba ServeGen 10-minute totals), plus the helpers a simulator needs to
// replay them (scale to a peak, step-held lookup that wraps, resample) and the
// diurnal statistics the trace READMEs quote.
//
// Invariants of a DemandSeries read from a file: step_s > 0, rate is not empty,
// every rate is finite and >= 0, and tokens_per_s is either empty or the same
// length as rate. rate[i] covers [origin_s + i*step_s, origin_s + (i+1)*step_s).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tidal::inference {

struct DemandSeries {
  std::string name;    // e.g. "azure2024_code_1week_per_minute"
  std::string source;  // the file it came from
  int64_t step_s = 60;
  // Wall time of rate[0]: Unix seconds for Azure (00:00 UTC of the first day),
  // seconds after local midnight of day 0 for ServeGen (0). Day boundaries for
  // the diurnal statistics fall at origin_s + k*86400 in that clock.
  int64_t origin_s = 0;
  std::vector<double> rate;          // requests per second in each step
  std::vector<double> tokens_per_s;  // input+output tokens/s where known, else empty

  int64_t span_s() const { return step_s * static_cast<int64_t>(rate.size()); }
};

// azure2024_{code,conv}_1week_per_minute.csv:
// timestamp_minute,requests,input_tokens,output_tokens (one row per UTC minute).
// rate = requests/60; tokens_per_s = (input+output)/60.
Result<DemandSeries> ReadAzure2024Minutes(const std::string& path);
Result<DemandSeries> ParseAzure2024Minutes(std::string_view text, const std::string& source);

// servegen_<model>_10min.csv: window_start_s,...,total_rate_rps,... with
// 600-s windows; tokens_per_s = (input_tokens_est+output_tokens_est)/600 when
// those columns exist (estimates; they under-count where token_coverage < 1).
Result<DemandSeries> ReadServeGen10Min(const std::string& path);
Result<DemandSeries> ParseServeGen10Min(std::string_view text, const std::string& source);

// format: "azure2024" or "servegen".
Result<DemandSeries> ReadDemandTrace(const std::string& path, std::string_view format);

// Scales rate (and tokens_per_s) so that max(rate) == peak. A series whose
// peak is 0 is returned unchanged (there is nothing to scale).
DemandSeries ScaleToPeak(const DemandSeries& s, double peak);

// The rate at t_s seconds after the series' start (t=0 is rate[0]), held over
// each step and wrapped modulo span_s(), so a one-day trace repeats every day
// and negative t counts back from the end. 0 for an empty series.
double RateAt(const DemandSeries& s, int64_t t_s);

// Re-steps the series: each new step is the time-weighted mean of the held
// series over that step (a finer step holds, a coarser one averages). The last
// step may be partial and is the mean over the part the series covers.
Result<DemandSeries> Resample(const DemandSeries& s, int64_t step_s);

// Peak/trough as the trace READMEs define it: for each full day, max/min of the
// 24 hourly mean rates; the median over full days. Hours that touch a step
// below missing_below x median(rate) count as missing (the ServeGen README's
// rule for collection gaps, 0.1); a day with a missing hour, or an hour of no
// requests (its ratio would be infinite), is skipped.
struct DiurnalStats {
  int full_days = 0;           // days used
  double median_ratio = 0;     // the "A" figure in the READMEs
  double min_ratio = 0;
  double max_ratio = 0;
  std::vector<double> per_day;  // ratio of each day used, in order
};
Result<DiurnalStats> ComputeDiurnalStats(const DemandSeries& s, double missing_below = 0);

}  // namespace tidal::inference
