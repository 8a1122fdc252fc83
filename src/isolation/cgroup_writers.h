// The planned cgroup v2 settings in the three forms a manager takes:
//  1. the interface files themselves (name -> content), and WriteCgroupDir
//     that writes them into an existing cgroup directory in a safe order;
//     CheckCgroupDir reads them back as the kernel normalises them;
//  2. a systemd drop-in ([Service], [Slice] or [Scope]) of the
//     systemd.resource-control(5) properties that set those files;
//  3. Kubernetes container resources (a Pod patch, YAML or JSON), whose
//     requests and limits the kubelet turns into some of those files, plus
//     cgroup.tidal.io/<file> annotations with tidal's value of each file a
//     resource cannot express (cpu.weight, cpuset, memory.min/high, io.max).
// Only names the real interfaces define are emitted. Output is a function
// of the settings alone: same settings, byte-identical text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "isolation/cgroup.h"

namespace tidal::isolation {

struct CgroupFile {
  std::string name;   // e.g. "cpu.max"
  std::string value;  // e.g. "800000 100000", as written (no newline)
  bool operator==(const CgroupFile&) const = default;
};

// memory.min / memory.high / memory.max as they stand; none = "max".
struct MemoryLimits {
  int64_t min = 0;
  std::optional<int64_t> high;
  std::optional<int64_t> max;
};

// The files to write, in an order that is safe from the `current` memory
// limits: cpuset.mems before cpuset.cpus, then cpu.weight and cpu.max, then
// memory so that min <= high <= max holds after every single write (lower
// min, raise max, set high, lower max, raise min), then io.max. cpuset.mems
// and io.max are left out where the settings have none.
std::vector<CgroupFile> CgroupWritePlan(const CgroupSettings& s, const MemoryLimits& current);

// The same from a fresh cgroup's defaults (memory.min 0, high and max "max").
std::vector<CgroupFile> CgroupFiles(const CgroupSettings& s);

// Writes the settings into `dir`, an existing cgroup directory (tidal never
// creates or removes cgroups), reading its memory limits first to choose
// the order. Every file must exist before anything is written: a missing
// one means its controller is not enabled, and the error says how to
// enable it. A rejected write names the file, the value and errno.
Status WriteCgroupDir(const std::string& dir, const CgroupSettings& s);

// Reads each file back and compares with what CgroupFiles says, normalised
// as the kernel prints: cpu lists as sets, memory rounded down to whole
// pages, io.max by key for the device's line. Lists every mismatch.
Status CheckCgroupDir(const std::string& dir, const CgroupSettings& s);

enum class SystemdSection { kService, kSlice, kScope };
std::string SystemdDropIn(const CgroupSettings& s, SystemdSection section);

// A Pod patch: metadata.annotations and spec.containers[0] (name, resources).
nlohmann::ordered_json KubernetesResourcesJson(const CgroupSettings& s);
// The same as YAML, with comments on what the kubelet derives from each value.
std::string KubernetesResourcesYaml(const CgroupSettings& s);

}  // namespace tidal::isolation
