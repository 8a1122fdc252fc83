// Internal to the nvidia-smi reader: the parsed `topo -m` matrix
// (nvidia_smi.cc) and the host layout derived from it (nvidia_smi_layout.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "topology/topology.h"

namespace tidal::topo::nvsmi {

// NVLink 2 (V100), 3 (A100) and 4 (H100) all run 25 GB/s per link per
// direction, so NV# is # x 25 GB/s: NV12 on an A100 SXM or an H100 PCIe
// bridge pair 300, NV18 on an H100 SXM 450. `topo -m` does not name the
// generation; Blackwell's NVLink 5 (50 GB/s a link) reads low, and a note
// says so.
inline constexpr double kGbpsPerNvlink = 25.0;

// Ordered from nearest to farthest, so the worst path of a set is the max.
enum class Path : uint8_t { kSelf, kNv, kPix, kPxb, kPhb, kNode, kSys };

struct Cell {
  Path path = Path::kSys;
  int links = 0;  // NV#
  bool operator==(const Cell&) const = default;
};

std::string CellName(Cell c);

struct Column {
  std::string name;
  bool gpu = false;
};

struct Matrix {
  int header_line = 0;
  std::vector<Column> cols;  // GPUs first, then NICs
  int gpus = 0;
  std::vector<std::string> extras;  // affinity columns, in order
  int numa_extra = -1;
  std::vector<std::vector<Cell>> cells;  // per GPU row, one per column
  std::vector<int> gpu_line;
  std::vector<std::string> numa;      // per GPU, "" without the column
  std::vector<std::vector<std::string>> extra_cells;  // per GPU, its affinity cells in `extras` order
  std::vector<int> nic_line;          // per NIC: its row's line, 0 if absent
  std::vector<std::string> nic_name;  // from the NIC Legend, "" if absent
  std::vector<std::string> notes;
  const Cell& At(int a, int b) const { return cells[static_cast<size_t>(a)][static_cast<size_t>(b)]; }
};

// Splits `text` into lines and parses the matrix (header, GPU and NIC rows,
// NIC Legend) with the checks ReadNvidiaSmiTopo makes; for readers that
// want the columns rather than a topology (nvidia_smi_affinity.cc).
Result<Matrix> ReadMatrix(std::string_view text, const std::string& src);

// The host's layout: NVLink over all GPUs or NVLink groups, NUMA and PCIe
// switch groups that nest, links rated from the worst path of each set.
// Appends what it decided (groups dropped, rates assumed) to `notes`.
HostLayout LayoutFromMatrix(const Matrix& m, const std::string& src, std::vector<std::string>& notes);

}  // namespace tidal::topo::nvsmi
