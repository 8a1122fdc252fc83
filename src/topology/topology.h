// The interconnect model: one tree of domains from GPUs up to the zone, with
// the fabric of each domain (bandwidth per GPU, latency, switch hops, the
// oversubscription of its uplink) and NIC rails. Immutable once built (see
// builder.h); the scheduler shares it by shared_ptr<const Topology> and keeps
// free-capacity aggregates per domain in ClusterState.
//
// Invariants (checked by the builder):
//  * Every domain but the root has one parent, of a strictly higher level.
//  * Domain ids are a pre-order (depth-first) numbering: a domain's subtree is
//    the id range [id, id + subtree_size); the hosts under any domain are a
//    contiguous run of host indices.
//  * A host (level node) holds only GPUs and sub-node domains (nvlink, pcie).
//
// Link model: two GPUs whose lowest common domain is D talk at
//   D.link.gbps / (largest oversubscription of an uplink on the path below D)
// GB/s per GPU per direction, with D.link.latency_us and D.link.hops. In a
// rail group (a leaf domain with rails > 0) GPUs on different rails pay one
// more hop (NCCL's PXN moves data over NVLink to the GPU on the right rail).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "topology/level.h"

namespace tidal::topo {

using DomainId = int32_t;
inline constexpr DomainId kNoDomain = -1;

// The fabric that joins a domain's children.
struct LinkSpec {
  double gbps = 0;               // per GPU per direction for traffic whose lowest common domain is this one
  double latency_us = 0;         // one way, whole path through this domain
  int hops = 0;                  // switch hops between two GPUs meeting here
  double oversubscription = 1;   // of this domain's uplink: downlink / uplink capacity (1 = non-blocking)
  bool operator==(const LinkSpec&) const = default;
};

// Defaults per level where a format says nothing (docs/topology.md gives the
// sources): NVLink 4 (H100 SXM) 450 GB/s, PCIe Gen4 x16 25 GB/s, cross-socket
// 20 GB/s, NVL72 900 GB/s, NDR 400 Gb/s NIC per GPU 50 GB/s with 1/3/5/7 hops.
LinkSpec DefaultLink(Level level, bool nvlink);

// What is inside one host. gpus < 0: unknown (the format does not say; the
// node list fills it in, see Materialize).
struct HostLayout {
  int gpus = -1;
  std::string gpu_model;
  bool nvlink = false;  // NVSwitch (or full NVLink mesh) across all the host's GPUs
  LinkSpec link;        // between GPUs of the host that share no smaller group; gbps 0 = default
  // Sub-node groups of local GPU indices (a PCIe switch, a NUMA node, an
  // NVLink bridge pair). Groups must nest or be disjoint.
  struct Group {
    Level level = Level::kPcie;
    std::string name;
    std::vector<int> gpus;
    bool nvlink = false;
    LinkSpec link;
    bool operator==(const Group&) const = default;
  };
  std::vector<Group> groups;
  bool operator==(const HostLayout&) const = default;
};

struct Domain {
  Level level = Level::kGpu;
  std::string name;          // unique among non-GPU domains; GPUs are "<host>/gpu<i>"
  DomainId parent = kNoDomain;
  LinkSpec link;
  bool nvlink = false;       // the domain's GPUs talk all-to-all over NVLink
  int rails = 0;             // a rail group: GPU i of each host on rail i % rails
  int switches = 1;          // parallel switches merged into this domain (spine planes)
  std::string gpu_model;     // hosts: the model of their GPUs ("" unknown)
  int local_index = 0;       // GPUs: index within the host
};

struct PathLink {
  DomainId common = kNoDomain;  // lowest common domain
  double gbps = 0;
  double latency_us = 0;
  int hops = 0;
};

class Topology {
 public:
  int32_t num_domains() const { return static_cast<int32_t>(domains_.size()); }
  const Domain& domain(DomainId d) const { return domains_[static_cast<size_t>(d)]; }
  DomainId root() const { return 0; }
  DomainId parent(DomainId d) const { return domains_[static_cast<size_t>(d)].parent; }
  Level level(DomainId d) const { return domains_[static_cast<size_t>(d)].level; }
  int depth(DomainId d) const { return depth_[static_cast<size_t>(d)]; }
  std::span<const DomainId> children(DomainId d) const {
    const auto b = child_begin_[static_cast<size_t>(d)], e = child_begin_[static_cast<size_t>(d) + 1];
    return {children_.data() + b, static_cast<size_t>(e - b)};
  }
  // Subtree as an id range [d, end).
  DomainId subtree_end(DomainId d) const { return subtree_end_[static_cast<size_t>(d)]; }
  bool Contains(DomainId ancestor, DomainId d) const { return d >= ancestor && d < subtree_end(ancestor); }
  std::string DomainName(DomainId d) const;

  // Hosts (level node) in pre-order; host index h in [0, num_hosts()).
  int32_t num_hosts() const { return static_cast<int32_t>(hosts_.size()); }
  DomainId host(int32_t h) const { return hosts_[static_cast<size_t>(h)]; }
  std::span<const DomainId> hosts() const { return hosts_; }
  std::optional<int32_t> FindHost(std::string_view name) const;
  int32_t host_index(DomainId host_domain) const { return host_index_[static_cast<size_t>(host_domain)]; }
  // GPUs of host h: domain ids [host_gpu_begin(h), +host_gpus(h)), by local index.
  int32_t host_gpus(int32_t h) const { return host_gpus_[static_cast<size_t>(h)]; }
  DomainId host_gpu(int32_t h, int32_t local) const {
    return gpu_ids_[static_cast<size_t>(host_gpu_begin_[static_cast<size_t>(h)] + local)];
  }
  // Hosts under domain d: host indices [first_host(d), first_host(d) + hosts_under(d)).
  int32_t first_host(DomainId d) const { return first_host_[static_cast<size_t>(d)]; }
  // The host a GPU (or sub-node domain) belongs to, -1 above hosts.
  int32_t host_of(DomainId d) const { return host_of_[static_cast<size_t>(d)]; }

  // Totals under a domain (static).
  int32_t gpus_under(DomainId d) const { return gpus_under_[static_cast<size_t>(d)]; }
  int32_t hosts_under(DomainId d) const { return hosts_under_[static_cast<size_t>(d)]; }
  int64_t total_gpus() const { return gpus_under_.empty() ? 0 : gpus_under_[0]; }

  // Levels present, innermost first, and the domains of each level in pre-order.
  const std::vector<Level>& levels() const { return levels_; }
  std::span<const DomainId> domains_at(Level l) const { return by_level_[static_cast<size_t>(LevelIndex(l))]; }

  // --- queries -----------------------------------------------------------
  DomainId LowestCommonDomain(DomainId a, DomainId b) const;
  // Of a set; for ids in pre-order, the first and last suffice.
  DomainId LowestCommonDomain(std::span<const DomainId> ds) const;
  // The ancestor of d at `level`, or kNoDomain if d's path has no such level.
  DomainId AncestorAt(DomainId d, Level level) const;
  // The largest NVLink domain a GPU is in: the highest ancestor reached
  // through domains that all have nvlink set (the GPU itself if none).
  DomainId NvlinkDomain(DomainId gpu) const { return nvlink_domain_[static_cast<size_t>(gpu)]; }
  int Rail(DomainId gpu) const;  // -1 where the GPU's path has no rail group
  // Bandwidth, latency and hops between two GPUs (see the link model above).
  PathLink Between(DomainId gpu_a, DomainId gpu_b) const;
  int Hops(DomainId gpu_a, DomainId gpu_b) const { return Between(gpu_a, gpu_b).hops; }
  // Largest oversubscription on the uplinks from d up to (not including) top.
  double OversubscriptionBelow(DomainId d, DomainId top) const;

  // Notes a reader made about its input (e.g. links it could not rate).
  const std::vector<std::string>& notes() const { return notes_; }
  // The layout host h was built with (gpus < 0: its GPU count is unknown).
  const HostLayout& layout(int32_t h) const { return layouts_[static_cast<size_t>(h)]; }
  bool gpus_known() const { return gpus_known_; }
  const std::string& source() const { return source_; }

 private:
  friend class TopologyBuilder;
  void Index();

  std::string source_;
  std::vector<Domain> domains_;
  std::vector<int32_t> depth_, child_begin_, subtree_end_;
  std::vector<DomainId> children_;
  std::vector<DomainId> hosts_;
  std::vector<int32_t> host_index_, host_of_, host_gpus_, host_gpu_begin_;
  std::vector<DomainId> gpu_ids_;  // per host, by local index (CSR by host_gpu_begin_)
  std::vector<int32_t> gpus_under_, hosts_under_, first_host_;
  std::vector<DomainId> nvlink_domain_;
  std::vector<DomainId> rail_group_;  // per GPU: its rail-group ancestor or kNoDomain
  std::vector<Level> levels_;
  std::vector<std::vector<DomainId>> by_level_;
  std::unordered_map<std::string, int32_t> host_by_name_;
  std::vector<std::string> notes_;
  std::vector<HostLayout> layouts_;
  bool gpus_known_ = true;
};

}  // namespace tidal::topo
