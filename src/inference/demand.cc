#include "inference/demand.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "common/csv.h"

namespace tidal::inference {
namespace {

constexpr int64_t kDay = 86400;
constexpr int64_t kHour = 3600;
constexpr int64_t kServeGenStep = 600;

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool Digits(std::string_view s, size_t pos, size_t n, int64_t& out) {
  if (pos + n > s.size()) return false;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data() + pos, s.data() + pos + n, v);
  if (ec != std::errc() || p != s.data() + pos + n) return false;
  out = v;
  return true;
}

// "2024-05-10T00:00Z" (optionally with ":SS") -> Unix seconds.
bool ParseIsoMinute(std::string_view s, int64_t& unix_s) {
  int64_t y, mo, d, h, mi, sec = 0;
  if (!Digits(s, 0, 4, y) || s.size() < 17 || s[4] != '-' || !Digits(s, 5, 2, mo) || s[7] != '-' ||
      !Digits(s, 8, 2, d) || s[10] != 'T' || !Digits(s, 11, 2, h) || s[13] != ':' || !Digits(s, 14, 2, mi)) {
    return false;
  }
  size_t pos = 16;
  if (s.size() == 20 && s[16] == ':') {
    if (!Digits(s, 17, 2, sec)) return false;
    pos = 19;
  }
  if (pos + 1 != s.size() || s[pos] != 'Z') return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59) return false;
  unix_s = DaysFromCivil(y, mo, d) * kDay + h * kHour + mi * 60 + sec;
  return true;
}

// A count or rate column: finite and >= 0, with a message that says which rule failed.
Result<double> NonNegative(const CsvRow& row, size_t col, const char* what) {
  TIDAL_ASSIGN_OR_RETURN(double v, row.Double(col, -std::numeric_limits<double>::max(),
                                              std::numeric_limits<double>::max()));
  if (v < 0) {
    return MakeError(ErrorCode::kParse, "{}: {} {} is negative; a {} cannot be below 0 (fix or remove the row)",
                     row.Where(col), what, v, what);
  }
  return v;
}

// Checks that t follows prev by exactly one step; names the rule that failed.
Status CheckNext(const CsvRow& row, size_t col, int64_t prev, int64_t t, int64_t step, std::string_view unit,
                 std::string_view shown) {
  if (t == prev + step) return Ok();
  if (t == prev) {
    return MakeError(ErrorCode::kParse, "{}: duplicate timestamp {} (the row before has the same one); keep one row per {}",
                     row.Where(col), shown, unit);
  }
  if (t < prev) {
    return MakeError(ErrorCode::kParse, "{}: timestamp {} is out of order (before the row above); sort the file by time",
                     row.Where(col), shown);
  }
  if ((t - prev) % step != 0) {
    return MakeError(ErrorCode::kParse, "{}: timestamp {} is not on the {}-s grid of the rows above; one row per {}",
                     row.Where(col), shown, step, unit);
  }
  return MakeError(ErrorCode::kParse,
                   "{}: gap in the trace: {} missing {}(s) before {}; every {} needs a row (write 0 for a {} with no requests)",
                   row.Where(col), (t - prev) / step - 1, unit, shown, unit, unit);
}

std::string Stem(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (auto dot = name.rfind(".csv"); dot != std::string::npos) name.resize(dot);
  return name;
}

Status RequireRows(const CsvTable& t) {
  if (t.rows().empty()) {
    return MakeError(ErrorCode::kParse, "{}: the trace has a header but no rows; a demand trace needs at least one step",
                     t.source());
  }
  return Ok();
}

}  // namespace

Result<DemandSeries> ParseAzure2024Minutes(std::string_view text, const std::string& source) {
  TIDAL_ASSIGN_OR_RETURN(CsvTable t, CsvTable::Parse(text, source));
  TIDAL_ASSIGN_OR_RETURN(size_t c_ts, t.RequireColumn("timestamp_minute"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_req, t.RequireColumn("requests"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_in, t.RequireColumn("input_tokens"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_out, t.RequireColumn("output_tokens"));
  TIDAL_RETURN_IF_ERROR(RequireRows(t));
  DemandSeries s{.name = Stem(source), .source = source, .step_s = 60};
  int64_t prev = 0;
  for (const CsvRow& row : t.rows()) {
    TIDAL_ASSIGN_OR_RETURN(std::string_view ts, row.Str(c_ts));
    int64_t unix_s = 0;
    if (!ParseIsoMinute(ts, unix_s)) {
      return MakeError(ErrorCode::kParse, "{}: '{}' is not a UTC minute; write it as 2024-05-10T00:00Z", row.Where(c_ts),
                       ts);
    }
    if (s.rate.empty()) {
      s.origin_s = unix_s;
    } else {
      TIDAL_RETURN_IF_ERROR(CheckNext(row, c_ts, prev, unix_s, 60, "minute", ts));
    }
    prev = unix_s;
    TIDAL_ASSIGN_OR_RETURN(double req, NonNegative(row, c_req, "request count"));
    TIDAL_ASSIGN_OR_RETURN(double in, NonNegative(row, c_in, "token count"));
    TIDAL_ASSIGN_OR_RETURN(double out, NonNegative(row, c_out, "token count"));
    s.rate.push_back(req / 60.0);
    s.tokens_per_s.push_back((in + out) / 60.0);
  }
  return s;
}

Result<DemandSeries> ParseServeGen10Min(std::string_view text, const std::string& source) {
  TIDAL_ASSIGN_OR_RETURN(CsvTable t, CsvTable::Parse(text, source));
  TIDAL_ASSIGN_OR_RETURN(size_t c_ts, t.RequireColumn("window_start_s"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_rate, t.RequireColumn("total_rate_rps"));
  const auto c_in = t.FindColumn("input_tokens_est");
  const auto c_out = t.FindColumn("output_tokens_est");
  const bool tokens = c_in && c_out;
  TIDAL_RETURN_IF_ERROR(RequireRows(t));
  DemandSeries s{.name = Stem(source), .source = source, .step_s = kServeGenStep};
  int64_t prev = 0;
  for (const CsvRow& row : t.rows()) {
    TIDAL_ASSIGN_OR_RETURN(int64_t w, row.IntLenient(c_ts, 0, int64_t{1} << 40));
    if (s.rate.empty()) {
      s.origin_s = w;
    } else {
      TIDAL_RETURN_IF_ERROR(CheckNext(row, c_ts, prev, w, kServeGenStep, "600-s window", std::to_string(w)));
    }
    prev = w;
    TIDAL_ASSIGN_OR_RETURN(double rate, NonNegative(row, c_rate, "rate"));
    s.rate.push_back(rate);
    if (tokens) {
      TIDAL_ASSIGN_OR_RETURN(double in, NonNegative(row, *c_in, "token count"));
      TIDAL_ASSIGN_OR_RETURN(double out, NonNegative(row, *c_out, "token count"));
      s.tokens_per_s.push_back((in + out) / static_cast<double>(kServeGenStep));
    }
  }
  return s;
}

Result<DemandSeries> ReadAzure2024Minutes(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseAzure2024Minutes(text, path);
}

Result<DemandSeries> ReadServeGen10Min(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseServeGen10Min(text, path);
}

Result<DemandSeries> ReadDemandTrace(const std::string& path, std::string_view format) {
  if (format == "azure2024") return ReadAzure2024Minutes(path);
  if (format == "servegen") return ReadServeGen10Min(path);
  return MakeError(ErrorCode::kInvalidArgument,
                   "{}: unknown trace format '{}' (known: azure2024 for azure2024_*_per_minute.csv, servegen for "
                   "servegen_*_10min.csv)",
                   path, format);
}

DemandSeries ScaleToPeak(const DemandSeries& s, double peak) {
  DemandSeries out = s;
  const double max = s.rate.empty() ? 0 : *std::max_element(s.rate.begin(), s.rate.end());
  if (!(max > 0)) return out;
  const double k = peak / max;
  // The maximum becomes exactly `peak`, not max*(peak/max) rounded.
  for (double& r : out.rate) r = r == max ? peak : r * k;
  for (double& r : out.tokens_per_s) r *= k;
  return out;
}

double RateAt(const DemandSeries& s, int64_t t_s) {
  if (s.rate.empty() || s.step_s <= 0) return 0;
  const int64_t span = s.span_s();
  int64_t t = t_s % span;
  if (t < 0) t += span;
  return s.rate[static_cast<size_t>(t / s.step_s)];
}

Result<DemandSeries> Resample(const DemandSeries& s, int64_t step_s) {
  if (step_s <= 0) {
    return MakeError(ErrorCode::kInvalidArgument, "resample {}: step {} s must be positive", s.name, step_s);
  }
  if (s.step_s <= 0) return MakeError(ErrorCode::kInvalidArgument, "resample {}: the series has no step", s.name);
  DemandSeries out = s;
  out.step_s = step_s;
  out.rate.clear();
  out.tokens_per_s.clear();
  const int64_t span = s.span_s();
  // Integral of the held series over [a, b), b <= span.
  auto integral = [&](const std::vector<double>& v, int64_t a, int64_t b) {
    double sum = 0;
    for (int64_t i = a / s.step_s; i * s.step_s < b; ++i) {
      const int64_t lo = std::max(a, i * s.step_s), hi = std::min(b, (i + 1) * s.step_s);
      sum += v[static_cast<size_t>(i)] * static_cast<double>(hi - lo);
    }
    return sum;
  };
  for (int64_t a = 0; a < span; a += step_s) {
    const int64_t b = std::min(span, a + step_s);
    out.rate.push_back(integral(s.rate, a, b) / static_cast<double>(b - a));
    if (!s.tokens_per_s.empty()) out.tokens_per_s.push_back(integral(s.tokens_per_s, a, b) / static_cast<double>(b - a));
  }
  return out;
}

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

Result<DiurnalStats> ComputeDiurnalStats(const DemandSeries& s, double missing_below) {
  if (s.step_s <= 0 || kHour % s.step_s != 0) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: diurnal statistics need a step that divides an hour (step {} s)",
                     s.name, s.step_s);
  }
  if (s.rate.empty()) return MakeError(ErrorCode::kInvalidArgument, "{}: empty series", s.name);
  const double floor = missing_below > 0 ? missing_below * Median(s.rate) : -1;
  const int64_t per_hour = kHour / s.step_s;
  // First day boundary at or after the series start, in the series' own clock.
  const int64_t first = ((kDay - s.origin_s % kDay) % kDay) / s.step_s;
  DiurnalStats st;
  for (int64_t d0 = first; d0 + 24 * per_hour <= static_cast<int64_t>(s.rate.size()); d0 += 24 * per_hour) {
    double hi = -1, lo = std::numeric_limits<double>::infinity();
    bool missing = false;
    for (int64_t h = 0; h < 24 && !missing; ++h) {
      double sum = 0;
      for (int64_t i = d0 + h * per_hour; i < d0 + (h + 1) * per_hour; ++i) {
        const double r = s.rate[static_cast<size_t>(i)];
        if (r < floor) missing = true;
        sum += r;
      }
      hi = std::max(hi, sum);
      lo = std::min(lo, sum);
    }
    if (missing || !(lo > 0)) continue;
    st.per_day.push_back(hi / lo);
  }
  if (st.per_day.empty()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{}: no full day without missing hours; diurnal statistics need at least one (series spans {} s)",
                     s.name, s.span_s());
  }
  st.full_days = static_cast<int>(st.per_day.size());
  st.median_ratio = Median(st.per_day);
  st.min_ratio = *std::min_element(st.per_day.begin(), st.per_day.end());
  st.max_ratio = *std::max_element(st.per_day.begin(), st.per_day.end());
  return st;
}

}  // namespace tidal::inference
