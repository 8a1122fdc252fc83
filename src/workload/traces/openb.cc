#include "workload/traces/openb.h"

#include <unordered_map>

#include "common/csv.h"

namespace tidal::traces {
namespace {

// Large enough for any real node or pod, small enough that sums of a whole
// trace cannot overflow int64.
constexpr int64_t kMaxCpuMilli = 100'000'000;    // 100k cores
constexpr int64_t kMaxMemoryMib = 1'000'000'000;  // ~1 PiB
constexpr int64_t kMaxGpusPerNode = 1024;
constexpr int64_t kMaxTime = int64_t{1} << 40;

Result<Qos> ParseQos(const CsvRow& row, size_t col) {
  TIDAL_ASSIGN_OR_RETURN(std::string_view s, row.Str(col));
  if (s.empty()) return Qos::kUnspecified;
  if (s == "LS") return Qos::kLatencySensitive;
  if (s == "BE") return Qos::kBestEffort;
  if (s == "Burstable") return Qos::kBurstable;
  if (s == "Guaranteed") return Qos::kGuaranteed;
  return MakeError(ErrorCode::kParse, "{}: unknown QoS '{}', expected LS, BE, Burstable or Guaranteed",
                   row.Where(col), s);
}

Result<std::optional<int64_t>> OptionalTime(const CsvRow& row, std::optional<size_t> col) {
  if (!col || row.Empty(*col)) return std::optional<int64_t>{};
  TIDAL_ASSIGN_OR_RETURN(int64_t t, row.Int(*col, 0, kMaxTime));
  return std::optional<int64_t>{t};
}

}  // namespace

Result<std::vector<NodeSpec>> ReadOpenbNodes(const std::string& path, OpenbNodeOptions options) {
  TIDAL_ASSIGN_OR_RETURN(CsvTable table, CsvTable::ReadFile(path));
  TIDAL_ASSIGN_OR_RETURN(size_t c_sn, table.RequireColumn("sn"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_cpu, table.RequireColumn("cpu_milli"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_mem, table.RequireColumn("memory_mib"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_gpu, table.RequireColumn("gpu"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_model, table.RequireColumn("model"));
  std::vector<NodeSpec> nodes;
  nodes.reserve(table.rows().size());
  std::unordered_map<std::string, int> seen;  // name -> line
  for (const CsvRow& row : table.rows()) {
    NodeSpec n;
    TIDAL_ASSIGN_OR_RETURN(std::string_view sn, row.Str(c_sn));
    if (sn.empty()) return MakeError(ErrorCode::kParse, "{}: empty node name", row.Where(c_sn));
    if (auto [it, fresh] = seen.emplace(std::string(sn), row.line()); !fresh) {
      return MakeError(ErrorCode::kParse, "{}: node '{}' is listed twice (first at line {}); node names must be unique",
                       row.Where(c_sn), sn, it->second);
    }
    n.name = std::string(sn);
    TIDAL_ASSIGN_OR_RETURN(n.cpu_milli, row.Int(c_cpu, 0, kMaxCpuMilli));
    TIDAL_ASSIGN_OR_RETURN(n.memory_mib, row.Int(c_mem, 0, kMaxMemoryMib));
    TIDAL_ASSIGN_OR_RETURN(int64_t gpus, row.Int(c_gpu, 0, kMaxGpusPerNode));
    n.gpu_count = static_cast<int32_t>(gpus);
    TIDAL_ASSIGN_OR_RETURN(std::string_view model, row.Str(c_model));
    n.gpu_model = std::string(model);
    if (gpus > 0 && model.empty()) {
      return MakeError(ErrorCode::kParse, "{}: node '{}' has {} GPUs but no model; fill in the model",
                       row.Where(c_model), n.name, gpus);
    }
    if (gpus == 0 && !model.empty()) {
      return MakeError(ErrorCode::kParse, "{}: node '{}' names GPU model '{}' but has 0 GPUs",
                       row.Where(c_model), n.name, model);
    }
    if (options.gpu_nodes_only && gpus == 0) continue;
    nodes.push_back(std::move(n));
  }
  if (nodes.empty()) {
    return MakeError(ErrorCode::kParse, "{}: no nodes{}", path,
                     options.gpu_nodes_only ? " with GPUs" : "");
  }
  return nodes;
}

Result<std::vector<Job>> ReadOpenbPods(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(CsvTable table, CsvTable::ReadFile(path));
  TIDAL_ASSIGN_OR_RETURN(size_t c_name, table.RequireColumn("name"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_cpu, table.RequireColumn("cpu_milli"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_mem, table.RequireColumn("memory_mib"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_ngpu, table.RequireColumn("num_gpu"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_milli, table.RequireColumn("gpu_milli"));
  const auto c_spec = table.FindColumn("gpu_spec");
  const auto c_qos = table.FindColumn("qos");
  const auto c_create = table.FindColumn("creation_time");
  const auto c_delete = table.FindColumn("deletion_time");
  const auto c_sched = table.FindColumn("scheduled_time");

  std::vector<Job> pods;
  pods.reserve(table.rows().size());
  std::unordered_map<std::string, int> seen;  // name -> line
  for (const CsvRow& row : table.rows()) {
    Job j;
    j.id = static_cast<JobId>(pods.size());
    j.source = fmt::format("{}:{}", path, row.line());
    TIDAL_ASSIGN_OR_RETURN(std::string_view name, row.Str(c_name));
    if (name.empty()) return MakeError(ErrorCode::kParse, "{}: empty pod name", row.Where(c_name));
    if (auto [it, fresh] = seen.emplace(std::string(name), row.line()); !fresh) {
      return MakeError(ErrorCode::kParse, "{}: pod '{}' is listed twice (first at line {}); pod names must be unique",
                       row.Where(c_name), name, it->second);
    }
    j.name = std::string(name);
    TIDAL_ASSIGN_OR_RETURN(j.cpu_milli, row.Int(c_cpu, 0, kMaxCpuMilli));
    TIDAL_ASSIGN_OR_RETURN(j.memory_mib, row.Int(c_mem, 0, kMaxMemoryMib));
    TIDAL_ASSIGN_OR_RETURN(int64_t ngpu, row.Int(c_ngpu, 0, kMaxGpusPerNode));
    TIDAL_ASSIGN_OR_RETURN(int64_t milli, row.Int(c_milli, 0, kMilliPerGpu));
    j.num_gpu = static_cast<int32_t>(ngpu);
    if (ngpu == 0) {
      if (milli != 0) {
        return MakeError(ErrorCode::kParse, "{}: pod '{}' asks for {} milli-GPU but 0 GPUs",
                         row.Where(c_milli), j.name, milli);
      }
      j.gpu_milli = 0;
    } else {
      if (milli == 0) {
        return MakeError(ErrorCode::kParse, "{}: pod '{}' asks for {} GPUs of 0 milli-GPU each",
                         row.Where(c_milli), j.name, ngpu);
      }
      if (ngpu > 1 && milli != kMilliPerGpu) {
        return MakeError(ErrorCode::kParse,
                         "{}: pod '{}' shares a GPU ({} milli) across {} GPUs; only 1-GPU pods may "
                         "share, multi-GPU pods take whole GPUs (1000)",
                         row.Where(c_milli), j.name, milli, ngpu);
      }
      j.gpu_milli = static_cast<int32_t>(milli);
    }
    if (c_spec && !row.Empty(*c_spec)) {
      std::string_view spec = row.field(*c_spec);
      size_t start = 0;
      while (start <= spec.size()) {
        size_t bar = spec.find('|', start);
        if (bar == std::string_view::npos) bar = spec.size();
        if (bar > start) j.gpu_spec.emplace_back(spec.substr(start, bar - start));
        start = bar + 1;
      }
      if (j.num_gpu == 0 && !j.gpu_spec.empty()) {
        return MakeError(ErrorCode::kParse, "{}: CPU-only pod '{}' names GPU models '{}'",
                         row.Where(*c_spec), j.name, spec);
      }
    }
    if (c_qos) {
      TIDAL_ASSIGN_OR_RETURN(j.qos, ParseQos(row, *c_qos));
    }
    TIDAL_ASSIGN_OR_RETURN(j.submit_time_s, OptionalTime(row, c_create));
    TIDAL_ASSIGN_OR_RETURN(j.end_time_s, OptionalTime(row, c_delete));
    TIDAL_ASSIGN_OR_RETURN(j.scheduled_time_s, OptionalTime(row, c_sched));
    if (j.submit_time_s && j.end_time_s) {
      if (*j.end_time_s < *j.submit_time_s) {
        return MakeError(ErrorCode::kParse, "{}: pod '{}' is deleted ({}) before it is created ({})",
                         row.Where(*c_delete), j.name, *j.end_time_s, *j.submit_time_s);
      }
      const int64_t start = j.scheduled_time_s.value_or(*j.submit_time_s);
      j.duration_s = std::max<int64_t>(0, *j.end_time_s - start);
    }
    pods.push_back(std::move(j));
  }
  if (pods.empty()) return MakeError(ErrorCode::kParse, "{}: no pods (header only)", path);
  return pods;
}

}  // namespace tidal::traces
