// `nvidia-smi topo -m` (also `--matrix`): one host's GPU matrix. Columns are
// separated by tabs or runs of spaces; NIC columns/rows, the Legend and the
// NIC Legend may be present or not; "CPU Affinity" / "NUMA Affinity" /
// "GPU NUMA ID" columns are optional. The host gets one domain per NUMA node
// (pcie level) where there are several and, where PCIe switches group GPUs
// (PIX/PXB) and no NUMA group holds them, pcie groups (groups of one level
// cannot nest; a note says what was left out); NV# links make the host an
// NVLink domain when every GPU pair is NV-linked (NVSwitch), or nvlink
// groups for all-to-all NV-linked sets (bridged pairs). NICs are counted in
// a note (rails belong to the leaf switches, not the host). NIC rows may be
// missing (a cut paste) while the GPU rows are whole; `nvidia-smi nvlink
// -R/-s` output is an error that says to run `nvidia-smi topo -m`.
#pragma once

#include <string>
#include <string_view>

#include "topology/topology.h"

namespace tidal::topo {

// host_name: the host's name in the topology (the matrix has none); empty
// takes the source file's base name without extension.
Result<Topology> ReadNvidiaSmiTopo(std::string_view text, const std::string& source, const std::string& host_name = "");

}  // namespace tidal::topo
