// tidal's own topology spec (YAML, `version: 1`), documented with examples in
// docs/topology.md and data/topologies/. A tree of domain entries; an entry
// with `names: leaf[1-32]` stands for several sibling domains, and the names
// and hosts of the entries below it are shared out among them in order
// (evenly, or `per: N` each), so a 100k-GPU fat tree is a dozen lines.
#pragma once

#include <string>
#include <string_view>

#include "topology/topology.h"

namespace tidal::topo {

Result<Topology> ReadTidalYaml(std::string_view text, const std::string& source);
// Writes the explicit form (one entry per domain, hosts as compressed lists,
// one host type per distinct layout); reading it back gives the same domains.
std::string WriteTidalYaml(const Topology& t);

}  // namespace tidal::topo
