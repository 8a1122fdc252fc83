// The per-GPU CPU and NUMA affinity columns of `nvidia-smi topo -m`:
// "CPU Affinity" (a Linux cpu list such as 0-55,112-167: the CPUs nearest the
// GPU), "NUMA Affinity" (the host NUMA node(s) nearest it: 0, or 0-1 where the
// driver cannot tell) and "GPU NUMA ID" (the NUMA node of the GPU's own memory
// on coherent systems such as Grace Hopper; N/A elsewhere). The matrix itself
// is parsed and checked by the nvidia-smi topology reader (nvidia_smi.cc), so
// a file this reader accepts is one ReadNvidiaSmiTopo accepts too.
//
// N/A in a column means "not known" and is kept as an empty list (a note
// says so); a malformed cpu or node list is an error with file:line. A file
// without a "CPU Affinity" column is an error: it has nothing to read.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tidal::topo {

struct GpuAffinity {
  int gpu = 0;                     // the row's local index (GPU<n>)
  std::vector<int> cpus;           // sorted, unique; empty: N/A
  std::vector<int> numa_nodes;     // sorted, unique; empty: N/A or no column
  std::optional<int> gpu_numa_id;  // none: N/A or no column
  int line = 0;                    // the GPU row's line, for messages
};

struct NodeAffinity {
  std::string source;
  bool has_numa_column = false;
  bool has_gpu_numa_column = false;
  std::vector<GpuAffinity> gpus;  // by local index, GPU0 first
  std::vector<std::string> notes;
};

Result<NodeAffinity> ReadNvidiaSmiAffinity(std::string_view text, const std::string& source);

// The largest CPU or node number a list may name (Linux's NR_CPUS tops out
// at 8192; the margin keeps a damaged "0-999999999" from allocating).
inline constexpr int kMaxCpuListId = 65535;

// A Linux cpu list ("0-3,8,10-11": numbers and inclusive ranges, separated
// by commas; the format of cpuset.cpus and of /sys/devices/system/cpu/online)
// to its sorted, unique members. Errors say what is wrong in the list (the
// caller adds where it came from). Empty input is an empty list.
Result<std::vector<int>> ParseCpuList(std::string_view s);

// The canonical form the kernel prints: ascending, runs of two or more
// consecutive numbers as ranges ("0-3,8,10-11"); "" for an empty list.
std::string FormatCpuList(const std::vector<int>& sorted_unique);

}  // namespace tidal::topo
