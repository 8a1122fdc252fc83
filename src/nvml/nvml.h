// A node's GPUs as the NVIDIA driver reports them, read through NVML loaded
// at run time (dlopen "libnvidia-ml.so.1"): each GPU's model, UUID, PCI bus
// id, memory, utilisation, MIG mode and MIG devices, NUMA node and NVLinks
// (with what each link reaches), and the PCIe path between every pair.
//
// From that, the same matrix `nvidia-smi topo -m` prints (so the host
// layout comes from the one reader tidal has for it, topology/readers/
// nvidia_smi_matrix.h): NV# between GPUs whose links reach each other
// directly (NVLink bridges) or through NVSwitches (every GPU on the node's
// switches: the fewer links of the two), else the PCIe path from the common
// ancestor (PIX/PXB/PHB/NODE/SYS).
//
// A node without the driver gets a clear error: read GPU activity from the
// DCGM exporter instead (telemetry/dcgm.h). Calls a GPU does not support
// (utilisation under MIG, NVLink on PCIe cards, NUMA ids before NVML 12)
// leave the value out and add a note; other failures are errors naming the
// call and the GPU.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "topology/readers/nvidia_smi_matrix.h"

namespace tidal::nvml {

struct MigDevice {
  unsigned index = 0;
  std::string uuid, name;
  uint64_t memory_total_mib = 0;
};

struct NvLink {
  unsigned link = 0;
  std::string remote_bus_id;  // the PCI bus id at the other end ("" unknown)
};

struct Gpu {
  unsigned index = 0;
  std::string name, uuid, bus_id;
  uint64_t memory_total_mib = 0, memory_used_mib = 0;
  std::optional<unsigned> util_gpu_pct, util_memory_pct;
  bool mig_enabled = false, mig_pending = false;
  std::vector<MigDevice> mig;
  std::optional<unsigned> numa_node;
  std::vector<NvLink> nvlinks;  // active links only
};

struct NodeGpus {
  std::string driver_version;
  std::vector<Gpu> gpus;
  // ancestor[a][b]: nvmlGpuTopologyLevel_t of the pair (0..50), -1 unknown.
  std::vector<std::vector<int>> ancestor;
  std::vector<std::string> notes;
};

class Library {
 public:
  // `path`: the library to load; the default finds the driver's.
  static Result<std::unique_ptr<Library>> Open(const std::string& path = "libnvidia-ml.so.1");
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  Result<NodeGpus> Read();

 private:
  struct Fns;
  Library() = default;
  void* handle_ = nullptr;
  std::unique_ptr<Fns> fns_;
};

// The `nvidia-smi topo -m` matrix of the GPUs (no NIC columns), NUMA
// affinity filled in where NVML gives it.
topo::nvsmi::Matrix ToMatrix(const NodeGpus& node);

nlohmann::ordered_json ToJson(const NodeGpus& node);

}  // namespace tidal::nvml
