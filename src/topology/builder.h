// Building a Topology. Two layers:
//
//  * TopologyBuilder: domains by id with explicit parents (readers that know
//    the tree: tidal YAML, nvidia-smi, Lingjun CSV). Build() checks the
//    invariants of topology.h, renumbers in pre-order and fills defaults.
//  * FabricGraph: switches and hosts by name, joined by edges that may come
//    in any order (Slurm topology.conf, ibnetdiscover, Volcano HyperNodes,
//    Kubernetes labels). Build() resolves names, merges parallel switches
//    (switches with the same children: spine planes, or the leaves of a rail
//    group), rejects cycles, unknown switches and hosts under two parents
//    with the locations of both, infers levels from height where the format
//    has none, and hands the tree to a TopologyBuilder.
//
// Every error names the source location ("file:line") given with the item.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topology/topology.h"

namespace tidal::topo {

class TopologyBuilder {
 public:
  explicit TopologyBuilder(std::string source) : source_(std::move(source)) {}

  // parent kNoDomain: a top-level domain. Several top-level domains get a
  // common root ("cluster", one level above the highest of them).
  DomainId AddDomain(Level level, std::string name, DomainId parent, std::string where = "");
  DomainId AddHost(std::string name, DomainId parent, HostLayout layout, std::string where = "");
  Domain& mutable_domain(DomainId d) { return nodes_[static_cast<size_t>(d)].d; }
  int32_t size() const { return static_cast<int32_t>(nodes_.size()); }
  void AddNote(std::string note) { notes_.push_back(std::move(note)); }

  Result<Topology> Build() &&;

 private:
  struct Item {
    Domain d;
    std::string where;
    bool host = false;
    HostLayout layout;
    std::vector<DomainId> kids;
  };
  std::string source_;
  std::vector<Item> nodes_;
  std::vector<std::string> notes_;
};

// Gives every host whose GPU count is unknown the count (and model) of the
// node of the same name; a host with a known count must agree with the node
// list. Hosts missing from `nodes`, and nodes missing from the topology, are
// errors listing the first few names of each. `host_default` is the layout
// used for hosts that had none (its gpus field is ignored).
struct NodeGpus {
  std::string name;
  int gpus = 0;
  std::string gpu_model;
};
Result<Topology> Materialize(const Topology& t, const std::vector<NodeGpus>& nodes,
                             const HostLayout& host_default = {});

class FabricGraph {
 public:
  explicit FabricGraph(std::string source) : source_(std::move(source)) {}

  // A switch or block. level nullopt: inferred from its height above hosts
  // (1 leaf, 2 spine, 3 core, 4+ zone). Declaring a name twice is an error
  // naming both places.
  Status AddSwitch(const std::string& name, std::optional<Level> level, const std::string& where,
                   LinkSpec link = {}, bool nvlink = false);
  // A host; declaring it again (e.g. reached from two switch ports) is fine
  // when the layouts agree.
  Status AddHost(const std::string& name, const std::string& where, HostLayout layout = {});
  bool HasSwitch(const std::string& name) const { return switches_.contains(name); }
  bool HasHost(const std::string& name) const { return hosts_.contains(name); }
  // parent must be a switch (declared before Build); child a switch or host.
  void Connect(const std::string& parent, const std::string& child, const std::string& where);
  void AddNote(std::string note) { notes_.push_back(std::move(note)); }

  struct Options {
    // Merge switches that have exactly the same children into one domain
    // (their count is kept in Domain::switches; over hosts it is the rail count).
    bool merge_parallel = true;
  };
  Result<Topology> Build(const Options& options) &&;
  Result<Topology> Build() && { return std::move(*this).Build(Options{}); }

 private:
  struct Switch {
    std::optional<Level> level;
    std::string where;
    LinkSpec link;
    bool nvlink = false;
    size_t order = 0;
  };
  struct Host {
    std::string where;
    HostLayout layout;
    size_t order = 0;
  };
  struct Edge {
    std::string parent, child, where;
  };
  std::string source_;
  std::map<std::string, Switch> switches_;
  std::map<std::string, Host> hosts_;
  std::vector<Edge> edges_;
  std::vector<std::string> notes_;
  size_t next_order_ = 0;
};

}  // namespace tidal::topo
