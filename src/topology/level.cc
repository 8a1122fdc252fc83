#include "topology/level.h"

#include "common/strings.h"

namespace tidal::topo {

std::string_view LevelName(Level l) {
  switch (l) {
    case Level::kGpu: return "gpu";
    case Level::kNvlink: return "nvlink";
    case Level::kPcie: return "pcie";
    case Level::kNode: return "node";
    case Level::kBlock: return "block";
    case Level::kLeaf: return "leaf";
    case Level::kSpine: return "spine";
    case Level::kCore: return "core";
    case Level::kZone: return "zone";
  }
  return "?";
}

Result<Level> ParseLevel(std::string_view name) {
  const std::string l = AsciiLower(name);
  if (l == "gpu") return Level::kGpu;
  if (l == "nvlink") return Level::kNvlink;
  if (l == "pcie" || l == "numa" || l == "socket") return Level::kPcie;
  if (l == "node" || l == "host") return Level::kNode;
  if (l == "block" || l == "rack" || l == "nvl72" || l == "clique") return Level::kBlock;
  if (l == "leaf" || l == "tor" || l == "rail" || l == "asw") return Level::kLeaf;
  if (l == "spine" || l == "agg" || l == "aggregation" || l == "psw") return Level::kSpine;
  if (l == "core" || l == "superspine" || l == "super-spine" || l == "dsw") return Level::kCore;
  if (l == "zone" || l == "datacenter" || l == "site" || l == "hall") return Level::kZone;
  return MakeError(ErrorCode::kInvalidArgument,
                   "unknown level '{}'; use gpu, nvlink, pcie, node, block, leaf, spine, core or zone", name);
}

}  // namespace tidal::topo
