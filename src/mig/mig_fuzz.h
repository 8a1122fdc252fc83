// The body of the MIG readers' fuzz target (mig_fuzz.cc, clang with
// -DTIDAL_FUZZ=ON), shared with a unit test that runs it over
// src/mig/fuzz_corpus/ and the fixtures under g++. Checks: no reader crashes
// or throws; every error names the source; what -lgi yields is a valid layout
// of every geometry that accepts it; a mig-parted entry's layout holds the
// entry's counts and survives WriteMigParted -> ReadMigParted.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "mig/mig_parted.h"
#include "mig/nvidia_smi_mig.h"

namespace tidal::mig {

inline void MigFuzzCheck(bool ok, const char* what, std::string_view input) {
  if (ok) return;
  std::fprintf(stderr, "MIG reader fuzz: %s fails for input of %zu bytes: '%.*s'\n", what, input.size(),
               static_cast<int>(input.size() > 2000 ? 2000 : input.size()), input.data());
  std::abort();
}

template <typename T>
void MigFuzzError(const Result<T>& r, std::string_view input) {
  if (r) return;
  MigFuzzCheck(r.error().message.starts_with("fuzz"), "every error names its source", input);
}

inline std::map<std::string, int> MigFuzzCounts(const Geometry& g, const Layout& layout) {
  std::map<std::string, int> out;
  for (const Instance& in : layout.instances) ++out[g.profile(in.profile).name];
  return out;
}

inline void MigFuzzParted(const MigPartedConfig& config, std::string_view input) {
  for (const NamedMigConfig& named : config.configs) {
    MigFuzzCheck(!named.entries.empty(), "a config has entries", input);
    for (const Geometry& g : AllGeometries()) {
      std::map<int, std::optional<Layout>> gpus;
      for (const MigPartedEntry& e : named.entries) {
        auto layout = LayoutForEntry(e, g);
        MigFuzzError(layout, input);
        if (!layout) continue;
        MigFuzzCheck(static_cast<bool>(ValidateLayout(g, *layout)), "an entry's layout is valid", input);
        MigFuzzCheck(MigFuzzCounts(g, *layout) == e.Counts() || !e.mig_enabled, "an entry's layout has its counts", input);
        gpus[static_cast<int>(gpus.size())] = e.mig_enabled ? std::optional<Layout>(*layout) : std::nullopt;
      }
      if (gpus.empty()) continue;
      auto text = WriteMigParted("fuzz", gpus, g);
      MigFuzzCheck(static_cast<bool>(text), "layouts read from mig-parted can be written", input);
      auto back = ReadMigParted(*text, "fuzz-written");
      MigFuzzCheck(back && back->configs.size() == 1, "what WriteMigParted writes reads back", input);
      for (const auto& [gpu, layout] : gpus) {
        const MigPartedEntry* e = SelectEntry(back->configs[0], gpu, 0);
        MigFuzzCheck(e && e->mig_enabled == layout.has_value(), "each written GPU has its entry", input);
        MigFuzzCheck(!layout || e->Counts() == MigFuzzCounts(g, *layout), "written counts read back", input);
      }
    }
  }
}

inline void FuzzMigReaders(std::string_view input) {
  auto lgi = ReadLgi(input, "fuzz");
  MigFuzzError(lgi, input);
  if (lgi) {
    for (const Geometry& g : AllGeometries()) {
      auto layouts = LayoutsFromLgi(*lgi, g);
      MigFuzzError(layouts, input);
      if (!layouts) continue;
      size_t instances = 0;
      for (const auto& [gpu, layout] : *layouts) {
        MigFuzzCheck(static_cast<bool>(ValidateLayout(g, layout)), "a layout from -lgi is valid", input);
        instances += layout.instances.size();
      }
      MigFuzzCheck(instances == lgi->size(), "every -lgi row is an instance", input);
    }
  }
  auto lgip = ReadLgip(input, "fuzz");
  MigFuzzError(lgip, input);
  auto lgipp = ReadLgipp(input, "fuzz");
  MigFuzzError(lgipp, input);
  if (lgip || lgipp) {
    for (const Geometry& g : AllGeometries()) (void)CheckGeometry(g, lgip ? *lgip : std::vector<GiProfileRow>{}, lgipp ? *lgipp : std::vector<PlacementRow>{});
  }
  auto parted = ReadMigParted(input, "fuzz");
  MigFuzzError(parted, input);
  if (parted) MigFuzzParted(*parted, input);
  auto configmap = ReadMigPartedConfigMap(input, "fuzz");
  MigFuzzError(configmap, input);
  if (configmap) MigFuzzParted(*configmap, input);
}

}  // namespace tidal::mig
