// `nvidia-smi topo -m` (also `--matrix`): one host's GPU matrix. Columns are
// separated by tabs or runs of spaces; NIC columns/rows, the Legend and the
// NIC Legend may be present or not; "CPU Affinity" / "NUMA Affinity" /
// "GPU NUMA ID" columns are optional. The host gets one domain per NUMA node
// (pcie level) and, where PCIe switches group GPUs (PIX/PXB), pcie groups;
// NV# links make the host an NVLink domain when every GPU pair is NV-linked
// (NVSwitch), or nvlink groups for bridged pairs. NICs give the rail count.
#pragma once

#include <string>
#include <string_view>

#include "topology/topology.h"

namespace tidal::topo {

// host_name: the host's name in the topology (the matrix has none); empty
// takes the source file's base name without extension.
Result<Topology> ReadNvidiaSmiTopo(std::string_view text, const std::string& source, const std::string& host_name = "");

}  // namespace tidal::topo
