#include "workload/traces/philly.h"

#include <algorithm>
#include <charconv>

#include "common/csv.h"

namespace tidal::traces {
namespace {

constexpr int64_t kMaxDuration = int64_t{10} * 365 * 86400;  // ten years
constexpr int64_t kMaxGangGpus = 1 << 20;

bool ParseFixed(std::string_view s, size_t pos, size_t len, int& out) {
  if (pos + len > s.size()) return false;
  auto [p, ec] = std::from_chars(s.data() + pos, s.data() + pos + len, out);
  return ec == std::errc() && p == s.data() + pos + len;
}

// Days from 1970-01-01 to y-m-d (proleptic Gregorian), Howard Hinnant's algorithm.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

}  // namespace

Result<int64_t> ParseUtcTimestamp(std::string_view s) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
  const bool shape = s.size() == 19 && s[4] == '-' && s[7] == '-' && (s[10] == ' ' || s[10] == 'T') &&
                     s[13] == ':' && s[16] == ':';
  if (!shape || !ParseFixed(s, 0, 4, y) || !ParseFixed(s, 5, 2, mo) || !ParseFixed(s, 8, 2, d) ||
      !ParseFixed(s, 11, 2, h) || !ParseFixed(s, 14, 2, mi) || !ParseFixed(s, 17, 2, se)) {
    return MakeError(ErrorCode::kParse, "'{}' is not a timestamp of the form YYYY-MM-DD HH:MM:SS", s);
  }
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12 || d < 1 || d > kDays[mo - 1] || h > 23 || mi > 59 || se > 60) {
    return MakeError(ErrorCode::kParse, "'{}' is not a valid date and time", s);
  }
  return DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 +
         mi * 60 + se;
}

Result<PhillyJobs> ReadPhillyJobs(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(CsvTable table, CsvTable::ReadFile(path));
  TIDAL_ASSIGN_OR_RETURN(size_t c_ts, table.RequireColumn("timestamp"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_dur, table.RequireColumn("duration"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_gpus, table.RequireColumn("num_gpus"));
  const auto c_vc = table.FindColumn("cluster");
  PhillyJobs out;
  out.jobs.reserve(table.rows().size());
  std::vector<int64_t> absolute;
  absolute.reserve(table.rows().size());
  for (const CsvRow& row : table.rows()) {
    Job j;
    j.id = static_cast<JobId>(out.jobs.size());
    j.name = fmt::format("philly-{}", row.line());
    j.source = fmt::format("{}:{}", path, row.line());
    TIDAL_ASSIGN_OR_RETURN(std::string_view ts, row.Str(c_ts));
    auto t = ParseUtcTimestamp(ts);
    if (!t) return MakeError(ErrorCode::kParse, "{}: {}", row.Where(c_ts), t.error().message);
    absolute.push_back(*t);
    // Durations are written as decimals ("66.0"); fractional seconds are rejected
    // rather than rounded so no job's length changes silently.
    TIDAL_ASSIGN_OR_RETURN(int64_t dur, row.IntLenient(c_dur, 0, kMaxDuration));
    j.duration_s = dur;
    TIDAL_ASSIGN_OR_RETURN(int64_t gpus, row.Int(c_gpus, 1, kMaxGangGpus));
    j.num_gpu = static_cast<int32_t>(gpus);
    j.gpu_milli = kMilliPerGpu;
    j.single_node = false;
    if (c_vc) j.group = row.field(*c_vc);
    out.jobs.push_back(std::move(j));
  }
  if (out.jobs.empty()) return MakeError(ErrorCode::kParse, "{}: no jobs (header only)", path);
  out.epoch_s = *std::min_element(absolute.begin(), absolute.end());
  for (size_t i = 0; i < out.jobs.size(); ++i) out.jobs[i].submit_time_s = absolute[i] - out.epoch_s;
  return out;
}

Result<std::vector<NodeSpec>> ReadPhillyMachines(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(CsvTable table, CsvTable::ReadFile(path));
  TIDAL_ASSIGN_OR_RETURN(size_t c_id, table.RequireColumn("machineId"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_gpus, table.RequireColumn("number of GPUs"));
  const auto c_mem = table.FindColumn("single GPU mem");
  std::vector<NodeSpec> nodes;
  for (const CsvRow& row : table.rows()) {
    NodeSpec n;
    TIDAL_ASSIGN_OR_RETURN(std::string_view id, row.Str(c_id));
    if (id.empty()) return MakeError(ErrorCode::kParse, "{}: empty machine id", row.Where(c_id));
    n.name = std::string(id);
    TIDAL_ASSIGN_OR_RETURN(int64_t gpus, row.Int(c_gpus, 0, 1024));
    n.gpu_count = static_cast<int32_t>(gpus);
    if (gpus > 0) {
      std::string mem = c_mem ? row.field(*c_mem) : std::string();
      if (c_mem && (mem.size() < 3 || !mem.ends_with("GB"))) {
        return MakeError(ErrorCode::kParse, "{}: '{}' is not a GPU memory size like '12GB'",
                         row.Where(*c_mem), mem);
      }
      n.gpu_model = mem.empty() ? "philly-gpu" : "philly-" + mem;
    }
    nodes.push_back(std::move(n));
  }
  if (nodes.empty()) return MakeError(ErrorCode::kParse, "{}: no machines (header only)", path);
  return nodes;
}

}  // namespace tidal::traces
