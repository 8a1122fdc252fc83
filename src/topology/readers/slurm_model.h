// What the two Slurm topology syntaxes (topology.conf and topology.yaml) have
// in common, so that both are checked and built by the same code: a topology
// is a list of switches (topology/tree), of blocks (topology/block) or of
// rings (topology/ring), each item with the file:line it came from and its
// host lists already expanded. Internal to readers/slurm.cc and its tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "topology/topology.h"

namespace tidal::topo::slurm {

// Slurm's hostlist limit: one range names at most MAX_RANGE = MAX_SLURM_NODES
// = 65536 hosts (src/common/hostlist.h, slurm/slurm.h). tidal applies it to a
// whole Nodes=/Switches= value, which also bounds the memory a bad file costs.
inline constexpr size_t kMaxNamesPerList = 65536;
// topology.conf(5): a SwitchName "cannot be longer than 64 characters"
// (switch_record.c compares with HOST_NAME_MAX).
inline constexpr size_t kMaxSwitchName = 64;
// topology.conf(5), topology/ring: "A maximum of 16 nodes can be specified per ring."
inline constexpr size_t kMaxRingNodes = 16;

struct Names {
  std::vector<std::string> names;
  bool given = false;  // the key was present (even if its list turned out empty)
};

struct SwitchDef {
  std::string name, where;
  Names nodes, switches;
  std::optional<uint32_t> link_speed;
};

struct GroupDef {  // a block or a ring
  std::string name, where;
  Names nodes;
};

enum class Kind { kTree, kBlock, kRing, kFlat, kTorus3d };
std::string_view KindName(Kind k);

struct SlurmTopo {
  Kind kind = Kind::kTree;
  std::string name;   // topology.yaml's "topology:"; "" for topology.conf
  std::string where;  // where the topology (or the file's first record) starts
  std::vector<SwitchDef> switches;
  std::vector<GroupDef> groups;  // blocks or rings
  std::vector<int64_t> block_sizes;
  std::string block_sizes_where;
  std::vector<std::string> notes;  // the reader's, added to the topology built
  bool yaml = false;               // messages name topology.yaml's keys (nodes:, children:)
};

// Expands a Slurm host list given as `key` ("Nodes=", "children:") at
// `where`; an error names both.
Result<std::vector<std::string>> ExpandNames(std::string_view list, std::string_view key, const std::string& where);

// Checks a name Slurm would accept and tidal can write back (no blank,
// quote, '#', '=' or hostlist punctuation).
Status CheckName(std::string_view name, std::string_view what, const std::string& where);

// The per-item rules both syntaxes share (both/neither of Nodes and
// Switches, name length, ring size), then the build. `blocks`, for a tree:
// a block topology whose blocks are put between the tree's leaves and their
// hosts (reading "tree+block" from topology.yaml).
Result<Topology> BuildTopology(const SlurmTopo& topo, const std::string& source, const SlurmTopo* blocks = nullptr);

}  // namespace tidal::topo::slurm
