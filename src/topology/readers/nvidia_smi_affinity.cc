// Reads the affinity columns off the matrix the nvidia-smi reader parsed
// (nvsmi::ReadMatrix), so there is one parser of `topo -m` and this file
// only gives the columns their meaning.
#include "topology/readers/nvidia_smi_affinity.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "topology/readers/nvidia_smi_matrix.h"
#include "topology/readers/text_lines.h"

namespace tidal::topo {
namespace {

// One end of an item of a cpu list.
Result<int> CpuNumber(std::string_view item, std::string_view digits) {
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return MakeError(ErrorCode::kParse, "item '{}' is not a number or a range N-M", Printable(item));
  }
  const auto v = ParseDecimal(digits, kMaxCpuListId);
  if (!v) return MakeError(ErrorCode::kParse, "item '{}' names a number above {}", Printable(item), kMaxCpuListId);
  return static_cast<int>(*v);
}

}  // namespace

Result<std::vector<int>> ParseCpuList(std::string_view s) {
  // Ranges first, merged, then expanded: a damaged list of many overlapping
  // wide ranges costs no more than the numbers it finally names.
  std::vector<std::pair<int, int>> ranges;
  std::vector<int> out;
  if (s.empty()) return out;
  size_t pos = 0;
  int item = 0;
  while (pos <= s.size()) {
    ++item;
    size_t end = s.find(',', pos);
    if (end == std::string_view::npos) end = s.size();
    const std::string_view part = s.substr(pos, end - pos);
    if (part.empty()) {
      return MakeError(ErrorCode::kParse, "item {} is empty (two commas, or a comma at an end)", item);
    }
    const size_t dash = part.find('-');
    const std::string_view lo_s = part.substr(0, dash);
    const std::string_view hi_s = dash == std::string_view::npos ? lo_s : part.substr(dash + 1);
    TIDAL_ASSIGN_OR_RETURN(const int lo, CpuNumber(part, lo_s));
    TIDAL_ASSIGN_OR_RETURN(const int hi, CpuNumber(part, hi_s));
    if (hi < lo) return MakeError(ErrorCode::kParse, "range '{}' runs backwards (write {}-{})", Printable(part), hi, lo);
    ranges.emplace_back(lo, hi);
    pos = end + 1;
  }
  std::sort(ranges.begin(), ranges.end());
  int next = 0;  // the lowest number not yet in `out`
  for (const auto& [lo, hi] : ranges) {
    for (int v = std::max(lo, next); v <= hi; ++v) out.push_back(v);
    next = std::max(next, hi + 1);
  }
  return out;
}

std::string FormatCpuList(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", v[i]) : fmt::format("{}-{}", v[i], v[j]);
    i = j + 1;
  }
  return out;
}

namespace {

int ExtraIndex(const nvsmi::Matrix& m, std::string_view name) {
  for (size_t i = 0; i < m.extras.size(); ++i)
    if (m.extras[i] == name) return static_cast<int>(i);
  return -1;
}

// A cpu- or node-list cell of GPU `a`'s row: N/A leaves `out` empty and
// adds the GPU to `na`; anything else must be a list.
Status ListCell(const std::string& cell, const char* column, const char* expected, const std::string& source, const GpuAffinity& a,
                std::vector<int>& na, std::vector<int>& out) {
  if (cell == "N/A") {
    na.push_back(a.gpu);
    return Ok();
  }
  auto list = ParseCpuList(cell);
  if (!list) {
    return MakeError(ErrorCode::kParse, "{}:{}: GPU{}, {} '{}': {}; expected {}, or N/A", source, a.line, a.gpu, column, Printable(cell),
                     list.error().message, expected);
  }
  out = std::move(*list);
  return Ok();
}

std::string GpuSet(const std::vector<int>& g) { return fmt::format("{{{}}}", fmt::join(g, ",")); }

}  // namespace

Result<NodeAffinity> ReadNvidiaSmiAffinity(std::string_view text, const std::string& source) {
  TIDAL_ASSIGN_OR_RETURN(const nvsmi::Matrix m, nvsmi::ReadMatrix(text, source));
  const int cpu_col = ExtraIndex(m, "CPU Affinity");
  const int numa_col = ExtraIndex(m, "NUMA Affinity");
  const int gpu_numa_col = ExtraIndex(m, "GPU NUMA ID");
  if (cpu_col < 0) {
    return MakeError(ErrorCode::kParse,
                     "{}:{}: the matrix has no 'CPU Affinity' column, so it says nothing of which CPUs are near each GPU; "
                     "run `nvidia-smi topo -m` on the host itself (not in a container that hides the CPUs) and read that",
                     source, m.header_line);
  }
  NodeAffinity out;
  out.source = source;
  out.has_numa_column = numa_col >= 0;
  out.has_gpu_numa_column = gpu_numa_col >= 0;
  std::vector<int> cpu_na, numa_na;
  for (int g = 0; g < m.gpus; ++g) {
    const auto& cells = m.extra_cells[static_cast<size_t>(g)];
    GpuAffinity a;
    a.gpu = g;
    a.line = m.gpu_line[static_cast<size_t>(g)];
    TIDAL_RETURN_IF_ERROR(ListCell(cells[static_cast<size_t>(cpu_col)], "CPU Affinity", "a cpu list such as 0-55,112-167", source, a,
                                   cpu_na, a.cpus));
    if (numa_col >= 0) {
      TIDAL_RETURN_IF_ERROR(ListCell(cells[static_cast<size_t>(numa_col)], "NUMA Affinity", "a node number or list such as 0 or 0-1",
                                     source, a, numa_na, a.numa_nodes));
    }
    if (gpu_numa_col >= 0) {
      const std::string& id = cells[static_cast<size_t>(gpu_numa_col)];
      if (id != "N/A") {
        const auto v = ParseDecimal(id, kMaxCpuListId);
        if (!v) {
          return MakeError(ErrorCode::kParse, "{}:{}: GPU{}, GPU NUMA ID '{}' is not a node number or N/A", source, a.line, g,
                           Printable(id));
        }
        a.gpu_numa_id = static_cast<int>(*v);
      }
    }
    out.gpus.push_back(std::move(a));
  }
  if (!cpu_na.empty()) {
    out.notes.push_back(fmt::format("{}: GPUs {} have CPU Affinity N/A; no CPUs are known to be near them", source, GpuSet(cpu_na)));
  }
  if (!numa_na.empty()) {
    out.notes.push_back(fmt::format("{}: GPUs {} have NUMA Affinity N/A; their NUMA node is not known", source, GpuSet(numa_na)));
  }
  if (numa_col < 0) out.notes.push_back(fmt::format("{}: no NUMA Affinity column; the GPUs' NUMA nodes are not known", source));
  return out;
}

}  // namespace tidal::topo
