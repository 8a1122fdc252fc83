// A stand-in for libnvidia-ml.so.1 in tests: the C ABI of the NVML calls
// tidal makes (nvml/nvml_abi.h), answering from a JSON description of a
// node named by TIDAL_FAKE_NVML, read at nvmlInit_v2:
//   {"driver": "550.54.15", "init_error": 0,
//    "gpus": [{"name", "uuid", "bus_id", "memory_total", "memory_used",
//              "util": [gpu, memory] | null (not supported), "numa": n | null,
//              "mig": {"current": 0|1, "pending": 0|1, "max": n,
//                      "devices": [{"slot", "uuid", "name", "memory_total"}]},
//              "nvlink": null (not supported) | [{"active": bool, "remote": "bus id"}]}],
//    "ancestor": [[level, ...], ...]}
// Handles are small integers: GPU g is 0x1000 + 64 g, its MIG device in
// slot k is that + 1 + k.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "nvml/nvml_abi.h"

namespace {

using tidal::nvml::abi::Device;
using tidal::nvml::abi::Return;
namespace abi = tidal::nvml::abi;
using json = nlohmann::json;

json g_node;
bool g_init = false;
unsigned g_ancestor_calls = 0;

Device Handle(unsigned gpu, int mig = -1) { return reinterpret_cast<Device>(static_cast<uintptr_t>(0x1000 + 64 * gpu + 1 + mig)); }

// The GPU and MIG slot (-1: the GPU itself) of a handle, or false.
bool Decode(Device d, unsigned* gpu, int* mig) {
  const auto v = reinterpret_cast<uintptr_t>(d);
  if (!g_init || v < 0x1000) return false;
  *gpu = static_cast<unsigned>((v - 0x1000) / 64);
  *mig = static_cast<int>((v - 0x1000) % 64) - 1;
  return *gpu < g_node["gpus"].size();
}

const json* MigDevice(unsigned gpu, int slot) {
  const json& g = g_node["gpus"][gpu];
  if (!g.contains("mig") || !g["mig"].contains("devices")) return nullptr;
  for (const json& d : g["mig"]["devices"]) {
    if (d.value("slot", -1) == slot) return &d;
  }
  return nullptr;
}

Return CopyString(const std::string& s, char* out, unsigned length) {
  if (s.size() + 1 > length) return abi::kErrorInsufficientSize;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return abi::kSuccess;
}

}  // namespace

extern "C" {

Return nvmlInit_v2() {
  const char* path = std::getenv("TIDAL_FAKE_NVML");
  if (path == nullptr) return abi::kErrorDriverNotLoaded;
  std::ifstream in(path);
  g_node = json::parse(in, nullptr, false);
  if (g_node.is_discarded()) return abi::kErrorUnknown;
  if (const int e = g_node.value("init_error", 0); e != 0) return e;
  g_init = true;
  g_ancestor_calls = 0;
  return abi::kSuccess;
}

Return nvmlShutdown() {
  g_init = false;
  return abi::kSuccess;
}

const char* nvmlErrorString(Return r) {
  switch (r) {
    case abi::kSuccess: return "Success";
    case abi::kErrorUninitialized: return "Uninitialized";
    case abi::kErrorInvalidArgument: return "Invalid Argument";
    case abi::kErrorNotSupported: return "Not Supported";
    case abi::kErrorNotFound: return "Not Found";
    case abi::kErrorDriverNotLoaded: return "Driver Not Loaded";
    case abi::kErrorGpuIsLost: return "GPU is lost";
    default: return "Unknown Error";
  }
}

Return nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  if (!g_init) return abi::kErrorUninitialized;
  return CopyString(g_node.value("driver", ""), version, length);
}

Return nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!g_init) return abi::kErrorUninitialized;
  *count = static_cast<unsigned>(g_node["gpus"].size());
  return abi::kSuccess;
}

Return nvmlDeviceGetHandleByIndex_v2(unsigned int index, Device* device) {
  if (!g_init) return abi::kErrorUninitialized;
  if (index >= g_node["gpus"].size()) return abi::kErrorInvalidArgument;
  if (g_node["gpus"][index].value("lost", false)) return abi::kErrorGpuIsLost;
  *device = Handle(index);
  return abi::kSuccess;
}

Return nvmlDeviceGetName(Device d, char* name, unsigned int length) {
  unsigned g;
  int m;
  if (!Decode(d, &g, &m)) return abi::kErrorInvalidArgument;
  const json* src = m < 0 ? &g_node["gpus"][g] : MigDevice(g, m);
  return src == nullptr ? abi::kErrorInvalidArgument : CopyString(src->value("name", ""), name, length);
}

Return nvmlDeviceGetUUID(Device d, char* uuid, unsigned int length) {
  unsigned g;
  int m;
  if (!Decode(d, &g, &m)) return abi::kErrorInvalidArgument;
  const json* src = m < 0 ? &g_node["gpus"][g] : MigDevice(g, m);
  return src == nullptr ? abi::kErrorInvalidArgument : CopyString(src->value("uuid", ""), uuid, length);
}

Return nvmlDeviceGetPciInfo_v3(Device d, abi::PciInfo* pci) {
  unsigned g;
  int m;
  if (!Decode(d, &g, &m) || m >= 0) return abi::kErrorInvalidArgument;
  std::memset(pci, 0, sizeof *pci);
  const std::string bus = g_node["gpus"][g].value("bus_id", "");
  std::strncpy(pci->busId, bus.c_str(), sizeof pci->busId - 1);
  return abi::kSuccess;
}

Return nvmlDeviceGetMemoryInfo(Device d, abi::Memory* memory) {
  unsigned g;
  int m;
  if (!Decode(d, &g, &m)) return abi::kErrorInvalidArgument;
  const json* src = m < 0 ? &g_node["gpus"][g] : MigDevice(g, m);
  if (src == nullptr) return abi::kErrorInvalidArgument;
  memory->total = src->value("memory_total", 0ULL);
  memory->used = src->value("memory_used", 0ULL);
  memory->free = memory->total - memory->used;
  return abi::kSuccess;
}

Return nvmlDeviceGetUtilizationRates(Device d, abi::Utilization* u) {
  unsigned g;
  int m;
  if (!Decode(d, &g, &m)) return abi::kErrorInvalidArgument;
  const json& util = g_node["gpus"][g]["util"];
  if (!util.is_array()) return abi::kErrorNotSupported;
  u->gpu = util[0];
  u->memory = util[1];
  return abi::kSuccess;
}

#ifndef TIDAL_FAKE_NVML_OLD  // NVML before 12 has no NUMA node ids
Return nvmlDeviceGetNumaNodeId(Device d, unsigned int* node) {
  unsigned g;
  int m;
  if (!Decode(d, &g, &m)) return abi::kErrorInvalidArgument;
  const json& numa = g_node["gpus"][g]["numa"];
  if (!numa.is_number()) return abi::kErrorNotSupported;
  *node = numa;
  return abi::kSuccess;
}
#endif

Return nvmlDeviceGetMigMode(Device d, unsigned int* current, unsigned int* pending) {
  unsigned g;
  int m;
  if (!Decode(d, &g, &m)) return abi::kErrorInvalidArgument;
  const json& gpu = g_node["gpus"][g];
  if (!gpu.contains("mig")) return abi::kErrorNotSupported;
  *current = gpu["mig"].value("current", 0u);
  *pending = gpu["mig"].value("pending", 0u);
  return abi::kSuccess;
}

Return nvmlDeviceGetMaxMigDeviceCount(Device d, unsigned int* count) {
  unsigned g;
  int m;
  if (!Decode(d, &g, &m)) return abi::kErrorInvalidArgument;
  const json& gpu = g_node["gpus"][g];
  if (!gpu.contains("mig")) return abi::kErrorNotSupported;
  *count = gpu["mig"].value("max", 7u);
  return abi::kSuccess;
}

Return nvmlDeviceGetMigDeviceHandleByIndex(Device d, unsigned int index, Device* mig) {
  unsigned g;
  int m;
  if (!Decode(d, &g, &m) || m >= 0) return abi::kErrorInvalidArgument;
  if (MigDevice(g, static_cast<int>(index)) == nullptr) return abi::kErrorNotFound;
  *mig = Handle(g, static_cast<int>(index));
  return abi::kSuccess;
}

Return nvmlDeviceGetNvLinkState(Device d, unsigned int link, int* active) {
  unsigned g;
  int m;
  if (!Decode(d, &g, &m)) return abi::kErrorInvalidArgument;
  const json& links = g_node["gpus"][g]["nvlink"];
  if (!links.is_array()) return abi::kErrorNotSupported;
  if (link >= links.size()) return abi::kErrorInvalidArgument;
  *active = links[link].value("active", false) ? abi::kFeatureEnabled : 0;
  return abi::kSuccess;
}

Return nvmlDeviceGetNvLinkRemotePciInfo_v2(Device d, unsigned int link, abi::PciInfo* pci) {
  unsigned g;
  int m;
  if (!Decode(d, &g, &m)) return abi::kErrorInvalidArgument;
  const json& links = g_node["gpus"][g]["nvlink"];
  if (!links.is_array() || link >= links.size()) return abi::kErrorInvalidArgument;
  std::memset(pci, 0, sizeof *pci);
  std::strncpy(pci->busId, links[link].value("remote", "").c_str(), sizeof pci->busId - 1);
  return abi::kSuccess;
}

Return nvmlDeviceGetTopologyCommonAncestor(Device a, Device b, int* level) {
  ++g_ancestor_calls;
  unsigned ga, gb;
  int ma, mb;
  if (!Decode(a, &ga, &ma) || !Decode(b, &gb, &mb)) return abi::kErrorInvalidArgument;
  const json& anc = g_node["ancestor"];
  if (!anc.is_array()) return abi::kErrorNotSupported;
  *level = anc[ga][gb];
  return abi::kSuccess;
}

// Not NVML: how often the common-ancestor call was made since nvmlInit_v2
// (tests check each pair is asked once).
unsigned tidal_fake_nvml_ancestor_calls() { return g_ancestor_calls; }

}  // extern "C"
