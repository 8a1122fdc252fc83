// Reads the `nvidia-smi topo -m` matrix (header, GPU rows, NIC rows, NIC
// Legend) and checks it; nvidia_smi_layout.cc turns it into a host layout.
#include "topology/readers/nvidia_smi.h"

#include <algorithm>
#include <array>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "topology/builder.h"
#include "topology/readers/nvidia_smi_matrix.h"
#include "topology/readers/text_lines.h"

namespace tidal::topo {
namespace nvsmi {

std::string CellName(Cell c) {
  switch (c.path) {
    case Path::kSelf: return "X";
    case Path::kNv: return fmt::format("NV{}", c.links);
    case Path::kPix: return "PIX";
    case Path::kPxb: return "PXB";
    case Path::kPhb: return "PHB";
    case Path::kNode: return "NODE";
    case Path::kSys: return "SYS";
  }
  return "?";
}

}  // namespace nvsmi

namespace {

using nvsmi::Cell;
using nvsmi::Column;
using nvsmi::Matrix;
using nvsmi::Path;

std::optional<Cell> ParseCell(std::string_view s) {
  if (s == "X") return Cell{Path::kSelf, 0};
  if (s.size() > 2 && s.substr(0, 2) == "NV") {
    const auto n = ParseDecimal(s.substr(2), 64);
    if (!n || *n == 0) return std::nullopt;
    return Cell{Path::kNv, static_cast<int>(*n)};
  }
  if (s == "PIX") return Cell{Path::kPix, 0};
  if (s == "PXB") return Cell{Path::kPxb, 0};
  if (s == "PHB") return Cell{Path::kPhb, 0};
  if (s == "NODE") return Cell{Path::kNode, 0};
  if (s == "SYS" || s == "SOC") return Cell{Path::kSys, 0};  // SOC: the name before SYS (drivers up to 384)
  return std::nullopt;
}

std::optional<int> GpuIndex(std::string_view t) {
  if (t.size() < 4 || t.substr(0, 3) != "GPU") return std::nullopt;
  const auto n = ParseDecimal(t.substr(3), 4095);
  if (!n) return std::nullopt;
  return static_cast<int>(*n);
}

constexpr std::array<std::array<std::string_view, 3>, 3> kExtras = {{
    {"CPU", "Affinity", ""},
    {"NUMA", "Affinity", ""},
    {"GPU", "NUMA", "ID"},
}};

Status ParseHeader(const std::string& src, const TextLine& l, const std::vector<std::string_view>& f, Matrix& m) {
  m.header_line = l.no;
  size_t i = 0;
  while (i < f.size()) {
    bool matched = false;
    for (size_t e = 0; e < kExtras.size() && !matched; ++e) {
      size_t words = 0;
      while (words < 3 && !kExtras[e][words].empty()) ++words;
      if (i + words > f.size()) continue;
      bool eq = true;
      for (size_t w = 0; w < words; ++w) eq = eq && f[i + w] == kExtras[e][w];
      if (!eq) continue;
      std::string name;
      for (size_t w = 0; w < words; ++w) {
        if (w) name += ' ';
        name += kExtras[e][w];
      }
      if (e == 1) m.numa_extra = static_cast<int>(m.extras.size());
      m.extras.push_back(std::move(name));
      i += words;
      matched = true;
    }
    if (matched) continue;
    const std::string_view t = f[i];
    if (!m.extras.empty()) {
      return MakeError(ErrorCode::kParse,
                       "{}:{}: unknown column '{}' after the affinity columns; tidal knows CPU Affinity, NUMA Affinity and "
                       "GPU NUMA ID",
                       src, l.no, Printable(t));
    }
    if (auto g = GpuIndex(t)) {
      if (*g != m.gpus || static_cast<int>(m.cols.size()) != m.gpus) {
        return MakeError(ErrorCode::kParse,
                         "{}:{}: header column {} is '{}'; GPU columns must run GPU0, GPU1, ... in order before the NIC "
                         "columns",
                         src, l.no, m.cols.size() + 1, Printable(t));
      }
      ++m.gpus;
    }
    for (const Column& c : m.cols) {
      if (c.name == t) return MakeError(ErrorCode::kParse, "{}:{}: the header names column '{}' twice", src, l.no, Printable(t));
    }
    m.cols.push_back({std::string(t), GpuIndex(t).has_value()});
    ++i;
  }
  m.nic_line.assign(m.cols.size() - static_cast<size_t>(m.gpus), 0);
  m.nic_name.assign(m.nic_line.size(), "");
  return Ok();
}

// The header is the first line whose first field is GPU0 and whose second
// is not a cell (the GPU0 row has X there).
bool IsHeader(const std::vector<std::string_view>& f) {
  return !f.empty() && f[0] == "GPU0" && (f.size() == 1 || !ParseCell(f[1]));
}

// No matrix: say what the file is instead, and which command gives a matrix.
Status NotAMatrix(const std::string& src, const std::vector<TextLine>& lines) {
  const TextLine* first = nullptr;
  bool uuid = false, remote = false, speed = false, rows = false;
  for (const TextLine& l : lines) {
    if (IsBlank(l.text)) continue;
    if (!first) first = &l;
    const auto f = SplitFields(l.text);
    uuid = uuid || (f.size() >= 2 && f[0] == "GPU" && l.text.find("(UUID:") != std::string_view::npos);
    remote = remote || (f.size() >= 2 && f[0] == "Link" && l.text.find("Remote Device") != std::string_view::npos);
    speed = speed || (f.size() >= 3 && f[0] == "Link" && (f.back() == "GB/s" || f.back() == "<inactive>"));
    rows = rows || (f.size() >= 2 && GpuIndex(f[0]) && ParseCell(f[1]));
  }
  if (!first) {
    return MakeError(ErrorCode::kParse, "{}:1: the file is empty; expected the output of `nvidia-smi topo -m`", src);
  }
  if (uuid && remote) {
    return MakeError(ErrorCode::kParse,
                     "{}:{}: this is `nvidia-smi nvlink -R` output (the remote PCI device of each NVLink), not a "
                     "`nvidia-smi topo -m` matrix: it names peers by PCI address and has no PCIe or NUMA paths; run "
                     "`nvidia-smi topo -m` on the host and read that output",
                     src, first->no);
  }
  if (uuid && speed) {
    return MakeError(ErrorCode::kParse,
                     "{}:{}: this is `nvidia-smi nvlink -s` output (the speed of each NVLink), not a `nvidia-smi topo -m` "
                     "matrix: it does not say which GPUs the links join; run `nvidia-smi topo -m` on the host and read "
                     "that output",
                     src, first->no);
  }
  if (uuid) {
    return MakeError(ErrorCode::kParse,
                     "{}:{}: this lists GPUs by UUID (`nvidia-smi -L` or `-q` output?), not a `nvidia-smi topo -m` matrix; "
                     "run `nvidia-smi topo -m` on the host and read that output",
                     src, first->no);
  }
  if (rows) {
    return MakeError(ErrorCode::kParse,
                     "{}:{}: GPU rows without the header line of column names (GPU0 GPU1 ... CPU Affinity ...) above them; "
                     "is the top of the `nvidia-smi topo -m` output cut off?",
                     src, first->no);
  }
  return MakeError(ErrorCode::kParse,
                   "{}:{}: no `nvidia-smi topo -m` matrix: expected a header line of columns GPU0 GPU1 ... (NIC0 ..., CPU "
                   "Affinity, NUMA Affinity) and one row per GPU, found '{}'",
                   src, first->no, Printable(TrimSpace(first->text)));
}

Status ParseRow(const std::string& src, const TextLine& l, const std::vector<std::string_view>& f, size_t col, Matrix& m) {
  const size_t have = f.size() - 1, devices = m.cols.size(), want = devices + m.extras.size();
  const std::string& label = m.cols[col].name;
  if (!m.cols[col].gpu) {
    const size_t nic = col - static_cast<size_t>(m.gpus);
    if (m.nic_line[nic]) {
      return MakeError(ErrorCode::kParse, "{}:{}: a second row for {} (the first is at line {})", src, l.no, label, m.nic_line[nic]);
    }
    m.nic_line[nic] = l.no;
    if (have > devices) {
      return MakeError(ErrorCode::kParse, "{}:{}: row {} has {} cells but the header (line {}) has {} device columns", src, l.no,
                       label, have, m.header_line, devices);
    }
    if (have < devices) {
      // NIC rows only describe NIC paths, which the GPU rows give too: a cut one loses nothing.
      m.notes.push_back(fmt::format("{}:{}: row {} stops after {} of {} cells (cut?); the GPU rows give its GPU paths", src, l.no,
                                    label, have, devices));
      return Ok();
    }
    for (size_t c = 0; c < devices; ++c) {
      if (!ParseCell(f[c + 1])) {
        return MakeError(ErrorCode::kParse, "{}:{}: row {}, column {}: unknown cell '{}' (expected X, NV#, PIX, PXB, PHB, NODE or SYS)",
                         src, l.no, label, m.cols[c].name, Printable(f[c + 1]));
      }
    }
    return Ok();
  }
  const int g = static_cast<int>(col);
  const int next = static_cast<int>(m.cells.size());
  if (g < next) {
    return MakeError(ErrorCode::kParse, "{}:{}: a second row for {} (the first is at line {})", src, l.no, label,
                     m.gpu_line[static_cast<size_t>(g)]);
  }
  if (g > next) {
    return MakeError(ErrorCode::kParse, "{}:{}: row {} comes where GPU{} was expected; GPU rows run GPU0, GPU1, ... in order", src,
                     l.no, label, next);
  }
  if (have != want) {
    return MakeError(ErrorCode::kParse,
                     "{}:{}: row {} has {} cells but the header (line {}) has {} columns ({} devices{}{}); {}", src, l.no, label,
                     have, m.header_line, want, devices, m.extras.empty() ? "" : ", ", fmt::join(m.extras, ", "),
                     have < want ? "the row is cut short (a truncated file?)" : "the row has extra cells");
  }
  std::vector<Cell> row;
  for (size_t c = 0; c < devices; ++c) {
    auto cell = ParseCell(f[c + 1]);
    if (!cell) {
      return MakeError(ErrorCode::kParse, "{}:{}: row {}, column {}: unknown cell '{}' (expected X, NV#, PIX, PXB, PHB, NODE or SYS)",
                       src, l.no, label, m.cols[c].name, Printable(f[c + 1]));
    }
    row.push_back(*cell);
  }
  m.cells.push_back(std::move(row));
  m.gpu_line.push_back(l.no);
  m.numa.push_back(m.numa_extra >= 0 ? std::string(f[devices + 1 + static_cast<size_t>(m.numa_extra)]) : "");
  m.extra_cells.emplace_back(f.begin() + static_cast<std::ptrdiff_t>(devices + 1), f.end());
  return Ok();
}

Result<Matrix> ParseMatrix(const std::string& src, const std::vector<TextLine>& lines) {
  Matrix m;
  size_t k = 0;
  for (; k < lines.size(); ++k)
    if (IsHeader(SplitFields(lines[k].text))) break;
  if (k == lines.size()) return std::unexpected(NotAMatrix(src, lines).error());
  TIDAL_RETURN_IF_ERROR(ParseHeader(src, lines[k], SplitFields(lines[k].text), m));
  for (++k; k < lines.size(); ++k) {
    const TextLine& l = lines[k];
    if (IsBlank(l.text)) {
      if (m.cells.empty()) continue;
      break;
    }
    const auto f = SplitFields(l.text);
    if (f[0].starts_with("Legend")) break;
    size_t col = 0;
    while (col < m.cols.size() && m.cols[col].name != f[0]) ++col;
    if (col == m.cols.size()) {
      return MakeError(ErrorCode::kParse, "{}:{}: row '{}' is not a column of the header (line {}); a damaged line?", src, l.no,
                       Printable(f[0]), m.header_line);
    }
    TIDAL_RETURN_IF_ERROR(ParseRow(src, l, f, col, m));
  }
  const int last_line = lines.empty() ? 1 : lines.back().no;
  if (m.cells.empty()) {
    return MakeError(ErrorCode::kParse, "{}:{}: the header names {} GPU(s) but no GPU row follows it", src, m.header_line, m.gpus);
  }
  if (static_cast<int>(m.cells.size()) != m.gpus) {
    return MakeError(ErrorCode::kParse,
                     "{}:{}: GPU rows stop after GPU{} (line {}) but the header (line {}) names {} GPUs; the file is cut inside "
                     "the GPU matrix",
                     src, std::min(last_line, m.gpu_line.back() + 1), m.cells.size() - 1, m.gpu_line.back(), m.header_line,
                     m.gpus);
  }
  // The NIC Legend ("NIC0: mlx5_0") names the NIC columns.
  for (; k < lines.size(); ++k) {
    const auto f = SplitFields(lines[k].text);
    if (f.size() != 2 || f[0].size() < 5 || f[0].substr(0, 3) != "NIC" || f[0].back() != ':') continue;
    const auto n = ParseDecimal(f[0].substr(3, f[0].size() - 4), 4095);
    if (n && static_cast<size_t>(*n) < m.nic_name.size()) m.nic_name[static_cast<size_t>(*n)] = std::string(f[1]);
  }
  // Self on the diagonal only, and symmetric.
  for (int a = 0; a < m.gpus; ++a) {
    const int line = m.gpu_line[static_cast<size_t>(a)];
    if (m.At(a, a).path != Path::kSelf) {
      return MakeError(ErrorCode::kParse, "{}:{}: row GPU{} has '{}' in its own column, expected X", src, line, a, CellName(m.At(a, a)));
    }
    for (int b = 0; b < m.gpus; ++b) {
      if (a == b) continue;
      if (m.At(a, b).path == Path::kSelf) {
        return MakeError(ErrorCode::kParse, "{}:{}: row GPU{}, column GPU{} is X (self), but they are different GPUs", src, line, a, b);
      }
      if (b < a && !(m.At(a, b) == m.At(b, a))) {
        return MakeError(ErrorCode::kParse,
                         "{}:{}: row GPU{} says GPU{} is {} but row GPU{} (line {}) says {}; the matrix must be symmetric", src,
                         line, a, b, CellName(m.At(a, b)), b, m.gpu_line[static_cast<size_t>(b)], CellName(m.At(b, a)));
      }
    }
  }
  return m;
}

// The host's name when the caller gives none: the file's base name without
// its extension ("dgx052.txt" -> "dgx052").
std::string HostNameFromSource(const std::string& source) {
  const size_t slash = source.find_last_of("/\\");
  std::string base = slash == std::string::npos ? source : source.substr(slash + 1);
  if (const size_t dot = base.rfind('.'); dot != std::string::npos && dot > 0) base.resize(dot);
  return base.empty() ? "host" : base;
}

}  // namespace

Result<nvsmi::Matrix> nvsmi::ReadMatrix(std::string_view text, const std::string& src) { return ParseMatrix(src, SplitLines(text)); }

Result<Topology> ReadNvidiaSmiTopo(std::string_view text, const std::string& source, const std::string& host_name) {
  const std::vector<TextLine> lines = SplitLines(text);
  TIDAL_ASSIGN_OR_RETURN(Matrix m, ParseMatrix(source, lines));
  std::vector<std::string> notes = m.notes;
  HostLayout layout = nvsmi::LayoutFromMatrix(m, source, notes);
  TopologyBuilder b(source);
  for (auto& n : notes) b.AddNote(std::move(n));
  b.AddHost(host_name.empty() ? HostNameFromSource(source) : host_name, kNoDomain, std::move(layout),
            fmt::format("{}:{}", source, m.header_line));
  return std::move(b).Build();
}

}  // namespace tidal::topo
