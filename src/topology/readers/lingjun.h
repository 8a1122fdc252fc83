// The Alibaba Lingjun 2023 fabric (../shared/traces/alibaba-lingjun-2023/
// topo.csv: ip,DSW,PSW,ASW): a three-tier Clos, read as the strict tree
// host -> ToR (PSW/ASW) -> PSW -> DSW (ASW labels repeat under different
// PSWs, so a ToR is named by both). GPUs per host are not in the file: 8
// NVSwitch-connected GPUs per host by default (the README's assumption).
#pragma once

#include <string>
#include <string_view>

#include "topology/topology.h"

namespace tidal::topo {

struct LingjunOptions {
  int gpus_per_host = 8;
  std::string gpu_model = "H800";
};

Result<Topology> ReadLingjunCsv(std::string_view text, const std::string& source, const LingjunOptions& options = {});

}  // namespace tidal::topo
