// NVIDIA mig-parted configuration files (api/spec/v1 of github.com/NVIDIA/mig-parted):
//
//   version: v1
//   mig-configs:
//     all-balanced:                       # a named config (the value of the
//       - device-filter: ["0x233010DE"]   #   nvidia.com/mig.config node label)
//         devices: all                    # or a list of GPU indices: [0, 1]
//         mig-enabled: true
//         mig-devices:                    # profile -> count
//           "1g.10gb": 2
//           "2g.20gb": 1
//           "3g.40gb": 1
//
// The reader accepts what mig-parted accepts and refuses what it refuses:
// `version: v1`, no unknown fields, `devices` and `mig-enabled` required,
// `mig-devices` required when MIG is on and empty when it is off, counts >= 0
// and not all 0, profile names of the form [Nc.]Ng.Mgb[+attr,...|-attr,...].
// It is stricter in two places: a device-filter that is not a PCI id
// ("0xDDDDVVVV[:0xSSSSVVVV]"; mig-parted would silently match no GPU) and a
// key given twice are errors. A GPU-operator ConfigMap (data."config.yaml")
// reads with ReadMigPartedConfigMap, its errors naming the ConfigMap's lines.
//
// mig-parted itself only counts instances: it asks the driver to create them
// and the driver chooses the placements (trying other orders until one
// succeeds). LayoutForEntry places them the way tidal does: largest first,
// each at the lowest start that still lets the rest fit -- one valid
// placement, not necessarily the one the driver picks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "mig/geometry.h"

namespace tidal::mig {

// A device-filter item: the PCI device and vendor id as one number
// (0x233010DE = device 0x2330 of vendor 0x10DE), optionally with the
// subsystem's; a filter with a subsystem matches only that subsystem.
struct PciDeviceId {
  uint32_t id = 0;
  std::optional<uint32_t> subsystem;
  std::string ToString() const;  // "0x233010DE" or "0x233010DE:0x16C110DE"
  friend bool operator==(const PciDeviceId&, const PciDeviceId&) = default;
};

struct MigDeviceCount {
  std::string profile;  // as written: "1g.10gb", "1g.24gb+gfx", "1c.3g.20gb"
  int count = 0;
  int line = 0;
};

struct MigPartedEntry {
  std::string source;                    // for messages: the file, the config, the line
  std::string config;
  int line = 0;
  std::vector<PciDeviceId> device_filter;  // empty: every GPU model
  bool all_devices = false;              // `devices: all`
  std::vector<int> devices;              // `devices: [0, 1]` when !all_devices
  bool mig_enabled = false;
  std::vector<MigDeviceCount> mig_devices;  // in file order

  // Whether this entry applies to GPU `index` with PCI id `id` (mig-parted's
  // MatchesDeviceFilter and MatchesDevices).
  bool Matches(int index, uint32_t id, std::optional<uint32_t> subsystem = {}) const;
  std::map<std::string, int> Counts() const;  // profile -> count, zero counts left out
};

struct NamedMigConfig {
  std::string name;
  int line = 0;
  std::vector<MigPartedEntry> entries;  // in file order
};

struct MigPartedConfig {
  std::string source;
  std::vector<NamedMigConfig> configs;  // in file order
  const NamedMigConfig* Find(std::string_view name) const;
};

Result<MigPartedConfig> ReadMigParted(std::string_view text, std::string_view source);
// A ConfigMap whose data."config.yaml" holds a mig-parted config (as the GPU
// operator ships it); line numbers in errors are the ConfigMap's.
Result<MigPartedConfig> ReadMigPartedConfigMap(std::string_view text, std::string_view source, std::string_view key = "config.yaml");

// The entry that decides GPU `index`: mig-parted applies every matching entry
// in order, so the last match wins. nullptr when none matches.
const MigPartedEntry* SelectEntry(const NamedMigConfig& config, int index, uint32_t id, std::optional<uint32_t> subsystem = {});

// The entry's instances on a GPU of geometry `g`, placed as above and
// validated. An entry with `mig-enabled: false` gives an empty layout (so does
// `mig-devices: {}`; entry.mig_enabled tells them apart). Errors name the
// source:line, the config and the rule: a profile `g` lacks, more instances
// of a profile than the GPU allows, more compute or memory than it has, or
// counts whose placements cannot all fit.
Result<Layout> LayoutForEntry(const MigPartedEntry& entry, const Geometry& g, DriverCaps caps = {});

// A mig-parted config named `config_name` with one entry per group of GPUs
// whose layouts have the same counts (`devices: [0, 1]`), in order of their
// first GPU; std::nullopt for a GPU means `mig-enabled: false`. Profile names
// are g's; a comment above each entry gives tidal's placements. Errors: a
// config name that is not a Kubernetes label value (it becomes the
// nvidia.com/mig.config label), a negative GPU index, a layout not valid for g.
Result<std::string> WriteMigParted(std::string_view config_name, const std::map<int, std::optional<Layout>>& gpus, const Geometry& g);

}  // namespace tidal::mig
