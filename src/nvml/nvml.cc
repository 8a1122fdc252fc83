#include "nvml/nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include "nvml/nvml_abi.h"

namespace tidal::nvml {

struct Library::Fns {
  abi::InitFn init = nullptr;
  abi::ShutdownFn shutdown = nullptr;
  abi::ErrorStringFn error_string = nullptr;
  abi::GetDriverVersionFn driver_version = nullptr;
  abi::GetCountFn count = nullptr;
  abi::GetHandleByIndexFn handle = nullptr;
  abi::GetStringFn name = nullptr, uuid = nullptr;
  abi::GetPciInfoFn pci = nullptr;
  abi::GetMemoryInfoFn memory = nullptr;
  abi::GetUtilizationFn utilization = nullptr;
  abi::GetMigModeFn mig_mode = nullptr;
  abi::GetUintFn max_mig = nullptr, numa = nullptr;
  abi::GetMigHandleFn mig_handle = nullptr;
  abi::GetNvLinkStateFn nvlink_state = nullptr;
  abi::GetNvLinkRemotePciFn nvlink_remote = nullptr;
  abi::GetCommonAncestorFn ancestor = nullptr;

  std::string Why(abi::Return r) const {
    const char* s = error_string != nullptr ? error_string(r) : nullptr;
    return fmt::format("{} (NVML error {})", s != nullptr ? s : "unknown error", r);
  }
};

namespace {

template <typename F>
void Resolve(void* h, const char* symbol, F& out) {
  out = reinterpret_cast<F>(dlsym(h, symbol));
}

std::string CString(const char* buf, size_t n) { return std::string(buf, strnlen(buf, n)); }

// Bus ids compare without case and leading zeros of the domain
// ("00000000:18:00.0" and "0000:18:00.0" are the same device).
std::string BusKey(std::string id) {
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto colon = id.find(':');
  if (colon != std::string::npos) {
    std::string dom = id.substr(0, colon);
    dom.erase(0, std::min(dom.find_first_not_of('0'), dom.size() > 0 ? dom.size() - 1 : 0));
    id = dom + id.substr(colon);
  }
  return id;
}

topo::nvsmi::Path PathOf(int level) {
  using topo::nvsmi::Path;
  if (level <= abi::kTopologySingle) return Path::kPix;
  if (level <= abi::kTopologyMultiple) return Path::kPxb;
  if (level <= abi::kTopologyHostbridge) return Path::kPhb;
  if (level <= abi::kTopologyNode) return Path::kNode;
  return Path::kSys;
}

}  // namespace

Result<std::unique_ptr<Library>> Library::Open(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    return MakeError(ErrorCode::kNotFound,
                     "cannot load NVML ({}): {}; no NVIDIA driver on this machine? Read GPU activity from the DCGM exporter instead "
                     "(tidal mfu --dcgm)",
                     path, e != nullptr ? e : "not found");
  }
  std::unique_ptr<Library> lib(new Library());
  lib->handle_ = h;
  lib->fns_ = std::make_unique<Fns>();
  Fns& f = *lib->fns_;
  Resolve(h, "nvmlInit_v2", f.init);
  Resolve(h, "nvmlShutdown", f.shutdown);
  Resolve(h, "nvmlErrorString", f.error_string);
  Resolve(h, "nvmlSystemGetDriverVersion", f.driver_version);
  Resolve(h, "nvmlDeviceGetCount_v2", f.count);
  Resolve(h, "nvmlDeviceGetHandleByIndex_v2", f.handle);
  Resolve(h, "nvmlDeviceGetName", f.name);
  Resolve(h, "nvmlDeviceGetUUID", f.uuid);
  Resolve(h, "nvmlDeviceGetPciInfo_v3", f.pci);
  Resolve(h, "nvmlDeviceGetMemoryInfo", f.memory);
  Resolve(h, "nvmlDeviceGetUtilizationRates", f.utilization);
  Resolve(h, "nvmlDeviceGetMigMode", f.mig_mode);
  Resolve(h, "nvmlDeviceGetMaxMigDeviceCount", f.max_mig);
  Resolve(h, "nvmlDeviceGetMigDeviceHandleByIndex", f.mig_handle);
  Resolve(h, "nvmlDeviceGetNumaNodeId", f.numa);
  Resolve(h, "nvmlDeviceGetNvLinkState", f.nvlink_state);
  Resolve(h, "nvmlDeviceGetNvLinkRemotePciInfo_v2", f.nvlink_remote);
  Resolve(h, "nvmlDeviceGetTopologyCommonAncestor", f.ancestor);
  std::vector<std::string> missing;
  if (f.init == nullptr) missing.push_back("nvmlInit_v2");
  if (f.shutdown == nullptr) missing.push_back("nvmlShutdown");
  if (f.count == nullptr) missing.push_back("nvmlDeviceGetCount_v2");
  if (f.handle == nullptr) missing.push_back("nvmlDeviceGetHandleByIndex_v2");
  if (f.name == nullptr) missing.push_back("nvmlDeviceGetName");
  if (f.uuid == nullptr) missing.push_back("nvmlDeviceGetUUID");
  if (f.memory == nullptr) missing.push_back("nvmlDeviceGetMemoryInfo");
  if (!missing.empty()) {
    dlclose(h);
    lib->handle_ = nullptr;
    return MakeError(ErrorCode::kFailedPrecondition, "{} is not NVML, or too old (NVML 5.319 or later is needed): it lacks {}", path,
                     fmt::join(missing, ", "));
  }
  if (abi::Return r = f.init(); r != abi::kSuccess) {
    const std::string why = f.Why(r);
    dlclose(h);
    lib->handle_ = nullptr;
    return MakeError(ErrorCode::kFailedPrecondition, "nvmlInit_v2 failed: {}; is the NVIDIA driver loaded (nvidia-smi)?", why);
  }
  return lib;
}

Library::~Library() {
  if (handle_ == nullptr) return;
  if (fns_ && fns_->shutdown != nullptr) fns_->shutdown();
  dlclose(handle_);
}

Result<NodeGpus> Library::Read() {
  const Fns& f = *fns_;
  NodeGpus node;
  std::set<std::string> unsupported;
  auto optional = [&](abi::Return r, const char* call, const std::string& gpu) -> Result<bool> {
    if (r == abi::kSuccess) return true;
    if (r == abi::kErrorNotSupported || r == abi::kErrorFunctionNotFound) {
      unsupported.insert(call);
      return false;
    }
    return MakeError(ErrorCode::kIo, "{} on GPU {}: {}", call, gpu, f.Why(r));
  };
  if (f.driver_version != nullptr) {
    char buf[abi::kDriverVersionBufferSize] = {};
    if (f.driver_version(buf, sizeof buf) == abi::kSuccess) node.driver_version = CString(buf, sizeof buf);
  }
  unsigned n = 0;
  if (abi::Return r = f.count(&n); r != abi::kSuccess) return MakeError(ErrorCode::kIo, "nvmlDeviceGetCount_v2: {}", f.Why(r));
  std::vector<abi::Device> handles(n, nullptr);
  for (unsigned i = 0; i < n; ++i) {
    const std::string at = std::to_string(i);
    if (abi::Return r = f.handle(i, &handles[i]); r != abi::kSuccess) {
      return MakeError(ErrorCode::kIo, "nvmlDeviceGetHandleByIndex_v2({}): {}", i, f.Why(r));
    }
    Gpu g;
    g.index = i;
    char buf[abi::kNameBufferSize] = {};
    if (abi::Return r = f.name(handles[i], buf, sizeof buf); r != abi::kSuccess) return MakeError(ErrorCode::kIo, "nvmlDeviceGetName on GPU {}: {}", i, f.Why(r));
    g.name = CString(buf, sizeof buf);
    char ubuf[abi::kUuidBufferSize] = {};
    if (abi::Return r = f.uuid(handles[i], ubuf, sizeof ubuf); r != abi::kSuccess) return MakeError(ErrorCode::kIo, "nvmlDeviceGetUUID on GPU {}: {}", i, f.Why(r));
    g.uuid = CString(ubuf, sizeof ubuf);
    abi::Memory mem{};
    if (abi::Return r = f.memory(handles[i], &mem); r != abi::kSuccess) return MakeError(ErrorCode::kIo, "nvmlDeviceGetMemoryInfo on GPU {}: {}", i, f.Why(r));
    g.memory_total_mib = mem.total >> 20;
    g.memory_used_mib = mem.used >> 20;
    if (f.pci != nullptr) {
      abi::PciInfo pci{};
      TIDAL_ASSIGN_OR_RETURN(bool ok, optional(f.pci(handles[i], &pci), "nvmlDeviceGetPciInfo_v3", at));
      if (ok) g.bus_id = CString(pci.busId, sizeof pci.busId);
    }
    if (f.utilization != nullptr) {
      abi::Utilization u{};
      TIDAL_ASSIGN_OR_RETURN(bool ok, optional(f.utilization(handles[i], &u), "nvmlDeviceGetUtilizationRates", at));
      if (ok) {
        g.util_gpu_pct = u.gpu;
        g.util_memory_pct = u.memory;
      }
    }
    if (f.numa != nullptr) {
      unsigned numa = 0;
      TIDAL_ASSIGN_OR_RETURN(bool ok, optional(f.numa(handles[i], &numa), "nvmlDeviceGetNumaNodeId", at));
      if (ok) g.numa_node = numa;
    }
    if (f.mig_mode != nullptr) {
      unsigned current = 0, pending = 0;
      TIDAL_ASSIGN_OR_RETURN(bool ok, optional(f.mig_mode(handles[i], &current, &pending), "nvmlDeviceGetMigMode", at));
      if (ok) {
        g.mig_enabled = current == 1;
        g.mig_pending = pending == 1;
      }
    }
    if (g.mig_enabled && f.max_mig != nullptr && f.mig_handle != nullptr) {
      unsigned max = 0;
      TIDAL_ASSIGN_OR_RETURN(bool ok, optional(f.max_mig(handles[i], &max), "nvmlDeviceGetMaxMigDeviceCount", at));
      for (unsigned k = 0; ok && k < max; ++k) {
        abi::Device md = nullptr;
        const abi::Return r = f.mig_handle(handles[i], k, &md);
        if (r == abi::kErrorNotFound || r == abi::kErrorInvalidArgument) continue;  // an empty slot
        if (r != abi::kSuccess) return MakeError(ErrorCode::kIo, "nvmlDeviceGetMigDeviceHandleByIndex({}) on GPU {}: {}", k, i, f.Why(r));
        MigDevice m{.index = k};
        char mb[abi::kUuidBufferSize] = {};
        if (f.uuid(md, mb, sizeof mb) == abi::kSuccess) m.uuid = CString(mb, sizeof mb);
        char nb[abi::kNameBufferSize] = {};
        if (f.name(md, nb, sizeof nb) == abi::kSuccess) m.name = CString(nb, sizeof nb);
        abi::Memory mm{};
        if (f.memory(md, &mm) == abi::kSuccess) m.memory_total_mib = mm.total >> 20;
        g.mig.push_back(std::move(m));
      }
    }
    if (f.nvlink_state != nullptr) {
      for (unsigned link = 0; link < abi::kNvlinkMaxLinks; ++link) {
        int active = 0;
        const abi::Return r = f.nvlink_state(handles[i], link, &active);
        if (r == abi::kErrorInvalidArgument) break;  // past the GPU's last link
        TIDAL_ASSIGN_OR_RETURN(bool ok, optional(r, "nvmlDeviceGetNvLinkState", at));
        if (!ok) break;
        if (active != abi::kFeatureEnabled) continue;
        NvLink l{.link = link};
        if (f.nvlink_remote != nullptr) {
          abi::PciInfo pci{};
          if (f.nvlink_remote(handles[i], link, &pci) == abi::kSuccess) l.remote_bus_id = CString(pci.busId, sizeof pci.busId);
        }
        g.nvlinks.push_back(std::move(l));
      }
    }
    node.gpus.push_back(std::move(g));
  }
  node.ancestor.assign(n, std::vector<int>(n, -1));
  for (unsigned a = 0; a < n; ++a) {
    node.ancestor[a][a] = abi::kTopologyInternal;
    for (unsigned b = a + 1; b < n && f.ancestor != nullptr; ++b) {
      int level = -1;
      TIDAL_ASSIGN_OR_RETURN(bool ok, optional(f.ancestor(handles[a], handles[b], &level), "nvmlDeviceGetTopologyCommonAncestor",
                                               fmt::format("{} and {}", a, b)));
      if (ok) node.ancestor[a][b] = node.ancestor[b][a] = level;
    }
  }
  for (const std::string& call : unsupported) node.notes.push_back(fmt::format("{} is not supported here; its values are left out", call));
  if (f.numa == nullptr) node.notes.push_back("this NVML has no nvmlDeviceGetNumaNodeId (NVML < 12): no NUMA affinity");
  return node;
}

topo::nvsmi::Matrix ToMatrix(const NodeGpus& node) {
  using topo::nvsmi::Cell;
  using topo::nvsmi::Path;
  topo::nvsmi::Matrix m;
  m.gpus = static_cast<int>(node.gpus.size());
  std::map<std::string, size_t> gpu_by_bus;
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    m.cols.push_back({fmt::format("GPU{}", i), true});
    if (!node.gpus[i].bus_id.empty()) gpu_by_bus[BusKey(node.gpus[i].bus_id)] = i;
  }
  // Links per GPU pair: direct (bridge) ones counted per pair; links to
  // anything else (NVSwitch) join the GPU to the node's switch fabric.
  const size_t n = node.gpus.size();
  std::vector<std::vector<int>> direct(n, std::vector<int>(n, 0));
  std::vector<int> to_switch(n, 0);
  for (size_t a = 0; a < n; ++a) {
    for (const NvLink& l : node.gpus[a].nvlinks) {
      auto it = gpu_by_bus.find(BusKey(l.remote_bus_id));
      if (it != gpu_by_bus.end() && it->second != a) {
        ++direct[a][it->second];
      } else {
        ++to_switch[a];
      }
    }
  }
  bool numa = false;
  for (const Gpu& g : node.gpus) numa = numa || g.numa_node.has_value();
  if (numa) {
    m.extras.push_back("NUMA Affinity");
    m.numa_extra = 0;
  }
  for (size_t a = 0; a < n; ++a) {
    std::vector<Cell> row;
    for (size_t b = 0; b < n; ++b) {
      if (a == b) {
        row.push_back({Path::kSelf, 0});
        continue;
      }
      const int links = std::min(direct[a][b], direct[b][a]) + std::min(to_switch[a], to_switch[b]);
      if (links > 0) {
        row.push_back({Path::kNv, links});
      } else {
        const int level = node.ancestor.size() > a && node.ancestor[a].size() > b ? node.ancestor[a][b] : -1;
        row.push_back({level < 0 ? Path::kSys : PathOf(level), 0});
      }
    }
    m.cells.push_back(std::move(row));
    m.gpu_line.push_back(static_cast<int>(a) + 2);
    m.numa.push_back(node.gpus[a].numa_node ? std::to_string(*node.gpus[a].numa_node) : (numa ? "N/A" : ""));
    m.extra_cells.push_back(numa ? std::vector<std::string>{m.numa.back()} : std::vector<std::string>{});
  }
  return m;
}

nlohmann::ordered_json ToJson(const NodeGpus& node) {
  nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
  for (const Gpu& g : node.gpus) {
    nlohmann::ordered_json j = {{"index", g.index}, {"name", g.name}, {"uuid", g.uuid}, {"bus_id", g.bus_id},
                                {"memory_total_mib", g.memory_total_mib}, {"memory_used_mib", g.memory_used_mib}};
    j["util_gpu_pct"] = g.util_gpu_pct ? nlohmann::ordered_json(*g.util_gpu_pct) : nlohmann::ordered_json(nullptr);
    j["util_memory_pct"] = g.util_memory_pct ? nlohmann::ordered_json(*g.util_memory_pct) : nlohmann::ordered_json(nullptr);
    j["numa_node"] = g.numa_node ? nlohmann::ordered_json(*g.numa_node) : nlohmann::ordered_json(nullptr);
    j["mig"] = {{"enabled", g.mig_enabled}, {"pending", g.mig_pending}, {"devices", nlohmann::ordered_json::array()}};
    for (const MigDevice& d : g.mig) {
      j["mig"]["devices"].push_back({{"index", d.index}, {"uuid", d.uuid}, {"name", d.name}, {"memory_total_mib", d.memory_total_mib}});
    }
    j["nvlinks"] = nlohmann::ordered_json::array();
    for (const NvLink& l : g.nvlinks) j["nvlinks"].push_back({{"link", l.link}, {"remote_bus_id", l.remote_bus_id}});
    gpus.push_back(std::move(j));
  }
  return {{"driver_version", node.driver_version}, {"gpus", gpus}, {"ancestor", node.ancestor}, {"notes", node.notes}};
}

}  // namespace tidal::nvml
