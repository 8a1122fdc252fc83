// The example topologies shipped in data/topologies/ (docs/topology.md gives
// their sources): each is read as the tidal YAML spec it is, its structure is
// checked figure by figure against the comments in the file, and it is
// written in every export format and read back.
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "topology/formats.h"
#include "topology/readers/slurm.h"
#include "topology/readers/tidal_yaml.h"
#include "topology/topology_test_util.h"

namespace tidal::topo {
namespace {

using testing::HostNames;
using testing::HostsUnder;
using testing::Shape;

std::string SpecPath(const std::string& file) { return std::string(TIDAL_SOURCE_DIR) + "/data/topologies/" + file; }

Topology Load(const std::string& file) {
  auto t = ReadTopology(SpecPath(file));
  EXPECT_TRUE(t) << file << ": " << (t ? "" : t.error().message);
  if (!t) return Topology{};
  return std::move(*t);
}

DomainId Gpu(const Topology& t, const std::string& host, int local) {
  const auto h = t.FindHost(host);
  EXPECT_TRUE(h.has_value()) << "no host " << host;
  return h ? t.host_gpu(*h, local) : kNoDomain;
}

DomainId Named(const Topology& t, const std::string& name) {
  for (DomainId d = 0; d < t.num_domains(); ++d)
    if (t.level(d) != Level::kGpu && t.domain(d).name == name) return d;
  ADD_FAILURE() << "no domain " << name;
  return kNoDomain;
}

size_t Count(const Topology& t, Level l) { return t.domains_at(l).size(); }

// Domains above hosts (switches and blocks): what every format keeps.
int DomainsAboveHosts(const Topology& t) {
  int n = 0;
  for (DomainId d = 0; d < t.num_domains(); ++d) n += LevelIndex(t.level(d)) > LevelIndex(Level::kNode);
  return n;
}

// Size of the largest NVLink domain -> how many GPUs' domains have that size, counted once per domain.
std::map<int32_t, int> NvlinkDomainSizes(const Topology& t) {
  std::map<int32_t, int> out;
  std::set<DomainId> seen;
  for (DomainId g : t.domains_at(Level::kGpu)) {
    const DomainId nv = t.NvlinkDomain(g);
    if (seen.insert(nv).second) ++out[t.gpus_under(nv)];
  }
  return out;
}

void ExpectLink(const LinkSpec& l, double gbps, double latency_us, int hops, double over = 1) {
  EXPECT_DOUBLE_EQ(l.gbps, gbps);
  EXPECT_DOUBLE_EQ(l.latency_us, latency_us);
  EXPECT_EQ(l.hops, hops);
  EXPECT_DOUBLE_EQ(l.oversubscription, over);
}

void ExpectPath(const PathLink& p, DomainId common, double gbps, double latency_us, int hops) {
  EXPECT_EQ(p.common, common);
  EXPECT_NEAR(p.gbps, gbps, 1e-9);
  EXPECT_NEAR(p.latency_us, latency_us, 1e-9);
  EXPECT_EQ(p.hops, hops);
}

// --- DGX H100 SuperPOD ----------------------------------------------------

TEST(ExampleSpecs, DgxH100SuperPod) {
  const Topology t = Load("dgx-h100-superpod.yaml");
  ASSERT_GT(t.num_domains(), 0);
  EXPECT_EQ(t.num_hosts(), 127);  // the RA's 4-SU count: one DGX position is the UFM's
  EXPECT_EQ(t.total_gpus(), 1016);
  EXPECT_EQ(t.levels(), (std::vector<Level>{Level::kGpu, Level::kPcie, Level::kNode, Level::kLeaf, Level::kSpine}));
  EXPECT_EQ(Count(t, Level::kGpu), 1016u);
  EXPECT_EQ(Count(t, Level::kPcie), 254u);
  EXPECT_EQ(Count(t, Level::kNode), 127u);
  EXPECT_EQ(Count(t, Level::kLeaf), 4u);
  EXPECT_EQ(Count(t, Level::kSpine), 1u);
  EXPECT_FALSE(t.FindHost("dgx128").has_value());

  const DomainId spine = t.root();
  EXPECT_EQ(t.domain(spine).name, "spine");
  EXPECT_EQ(t.domain(spine).switches, 16);
  ExpectLink(t.domain(spine).link, 50, 8.1, 3);
  const std::vector<std::pair<std::string, std::string>> sus = {
      {"su1", "dgx[001-032]"}, {"su2", "dgx[033-064]"}, {"su3", "dgx[065-096]"}, {"su4", "dgx[097-127]"}};
  for (const auto& [name, hosts] : sus) {
    SCOPED_TRACE(name);
    const DomainId su = Named(t, name);
    EXPECT_EQ(t.parent(su), spine);
    EXPECT_EQ(HostsUnder(t, su), hosts);
    EXPECT_EQ(t.domain(su).rails, 8);
    EXPECT_EQ(t.domain(su).switches, 8);
    EXPECT_FALSE(t.domain(su).nvlink);
    ExpectLink(t.domain(su).link, 50, 5, 1);
  }

  // Every host: an 8-GPU NVLink 4 domain with two NUMA groups of 4 that keep NVLink.
  EXPECT_EQ(NvlinkDomainSizes(t), (std::map<int32_t, int>{{8, 127}}));
  for (int32_t h = 0; h < t.num_hosts(); ++h) {
    const DomainId hd = t.host(h);
    ASSERT_EQ(t.host_gpus(h), 8);
    EXPECT_TRUE(t.domain(hd).nvlink);
    EXPECT_EQ(t.domain(hd).gpu_model, "NVIDIA-H100-80GB-HBM3");
    ExpectLink(t.domain(hd).link, 450, 3, 1);
    for (int g = 0; g < 8; ++g) {
      const DomainId gpu = t.host_gpu(h, g);
      EXPECT_EQ(t.NvlinkDomain(gpu), hd);
      EXPECT_EQ(t.Rail(gpu), g);
      const DomainId numa = t.parent(gpu);
      EXPECT_EQ(t.level(numa), Level::kPcie);
      EXPECT_EQ(t.domain(numa).name, t.domain(hd).name + (g < 4 ? "/numa0" : "/numa1"));
      EXPECT_TRUE(t.domain(numa).nvlink);
      ExpectLink(t.domain(numa).link, 450, 3, 1);
    }
  }

  const DomainId su1 = Named(t, "su1");
  // Inside a host: NVLink whether or not the GPUs share a NUMA node.
  ExpectPath(t.Between(Gpu(t, "dgx001", 0), Gpu(t, "dgx001", 3)), Named(t, "dgx001/numa0"), 450, 3, 1);
  ExpectPath(t.Between(Gpu(t, "dgx001", 0), Gpu(t, "dgx001", 7)), Named(t, "dgx001"), 450, 3, 1);
  // Same rail in one SU: one leaf hop at the NIC rate.
  ExpectPath(t.Between(Gpu(t, "dgx001", 3), Gpu(t, "dgx032", 3)), su1, 50, 5, 1);
  // Different rails in one SU: one hop more, plus the NVLink hop's latency (PXN).
  ExpectPath(t.Between(Gpu(t, "dgx001", 3), Gpu(t, "dgx002", 4)), su1, 50, 5 + 3, 2);
  // Across SUs: leaf-spine-leaf, non-blocking.
  ExpectPath(t.Between(Gpu(t, "dgx001", 3), Gpu(t, "dgx033", 3)), spine, 50, 8.1, 3);
  ExpectPath(t.Between(Gpu(t, "dgx032", 0), Gpu(t, "dgx127", 7)), spine, 50, 8.1, 3);
  EXPECT_DOUBLE_EQ(t.OversubscriptionBelow(su1, spine), 1);
}

// --- GB200 NVL72 -----------------------------------------------------------

TEST(ExampleSpecs, Gb200Nvl72) {
  const Topology t = Load("gb200-nvl72.yaml");
  ASSERT_GT(t.num_domains(), 0);
  EXPECT_EQ(t.num_hosts(), 144);  // 8 racks x 18 compute trays
  EXPECT_EQ(t.total_gpus(), 576);
  EXPECT_EQ(t.levels(), (std::vector<Level>{Level::kGpu, Level::kNode, Level::kBlock, Level::kLeaf, Level::kSpine}));
  EXPECT_EQ(Count(t, Level::kNode), 144u);
  EXPECT_EQ(Count(t, Level::kBlock), 8u);
  EXPECT_EQ(Count(t, Level::kLeaf), 1u);
  EXPECT_EQ(Count(t, Level::kSpine), 1u);

  const DomainId spine = t.root();
  EXPECT_EQ(t.domain(spine).name, "spine");
  ExpectLink(t.domain(spine).link, 50, 8.1, 3);
  const DomainId su1 = Named(t, "su1");
  EXPECT_EQ(t.parent(su1), spine);
  EXPECT_EQ(t.children(spine).size(), 1u);
  EXPECT_EQ(t.domain(su1).rails, 4);
  EXPECT_EQ(t.domain(su1).switches, 4);
  EXPECT_EQ(t.hosts_under(su1), 144);
  ExpectLink(t.domain(su1).link, 50, 5, 1);
  for (int r = 1; r <= 8; ++r) {
    SCOPED_TRACE(r);
    const DomainId rack = Named(t, fmt::format("rack{}", r));
    EXPECT_EQ(t.parent(rack), su1);
    EXPECT_EQ(HostsUnder(t, rack), fmt::format("gb200-r{}-t[01-18]", r));
    EXPECT_EQ(t.gpus_under(rack), 72);
    EXPECT_TRUE(t.domain(rack).nvlink);
    ExpectLink(t.domain(rack).link, 900, 3, 1);
  }
  // The rack is the NVLink domain: 8 of 72 GPUs; trays are NVLink hosts of 4 at NVLink 5.
  EXPECT_EQ(NvlinkDomainSizes(t), (std::map<int32_t, int>{{72, 8}}));
  for (int32_t h = 0; h < t.num_hosts(); ++h) {
    const DomainId hd = t.host(h);
    ASSERT_EQ(t.host_gpus(h), 4);
    EXPECT_TRUE(t.domain(hd).nvlink);
    EXPECT_EQ(t.domain(hd).gpu_model, "NVIDIA-GB200");
    ExpectLink(t.domain(hd).link, 900, 3, 1);
    for (int g = 0; g < 4; ++g) {
      EXPECT_EQ(t.NvlinkDomain(t.host_gpu(h, g)), t.parent(hd));
      EXPECT_EQ(t.Rail(t.host_gpu(h, g)), g);
    }
  }

  ExpectPath(t.Between(Gpu(t, "gb200-r1-t01", 0), Gpu(t, "gb200-r1-t01", 3)), Named(t, "gb200-r1-t01"), 900, 3, 1);
  // Two trays of one rack: NVLink 5 through the switch trays.
  ExpectPath(t.Between(Gpu(t, "gb200-r1-t01", 0), Gpu(t, "gb200-r1-t18", 2)), Named(t, "rack1"), 900, 3, 1);
  // Two racks, same rail: the rail's leaf, at the 400 Gb/s NIC rate.
  ExpectPath(t.Between(Gpu(t, "gb200-r1-t01", 2), Gpu(t, "gb200-r8-t07", 2)), su1, 50, 5, 1);
  // Two racks, different rails: PXN over the rack's NVLink first.
  ExpectPath(t.Between(Gpu(t, "gb200-r1-t01", 0), Gpu(t, "gb200-r2-t05", 1)), su1, 50, 5 + 3, 2);
}

// --- Oversubscribed two-tier RoCE -------------------------------------------

TEST(ExampleSpecs, Roce2TierOversubscribed) {
  const Topology t = Load("roce-2tier-oversubscribed.yaml");
  ASSERT_GT(t.num_domains(), 0);
  EXPECT_EQ(t.num_hosts(), 64);
  EXPECT_EQ(t.total_gpus(), 512);
  EXPECT_EQ(t.levels(),
            (std::vector<Level>{Level::kGpu, Level::kNvlink, Level::kPcie, Level::kNode, Level::kLeaf, Level::kSpine}));
  EXPECT_EQ(Count(t, Level::kNvlink), 256u);
  EXPECT_EQ(Count(t, Level::kPcie), 128u);
  EXPECT_EQ(Count(t, Level::kNode), 64u);
  EXPECT_EQ(Count(t, Level::kLeaf), 4u);
  EXPECT_EQ(Count(t, Level::kSpine), 1u);

  const DomainId spine = t.root();
  ExpectLink(t.domain(spine).link, 25, 10, 3);
  for (int i = 1; i <= 4; ++i) {
    SCOPED_TRACE(i);
    const DomainId tor = Named(t, fmt::format("tor{}", i));
    EXPECT_EQ(t.parent(tor), spine);
    EXPECT_EQ(t.hosts_under(tor), 16);
    EXPECT_EQ(t.domain(tor).rails, 0);  // not rail-optimised: all 8 NICs of a host go to its ToR
    ExpectLink(t.domain(tor).link, 25, 6, 1, 3);
    EXPECT_DOUBLE_EQ(t.OversubscriptionBelow(tor, spine), 3);
  }
  EXPECT_EQ(HostsUnder(t, Named(t, "tor1")), "gpu[001-016]");
  EXPECT_EQ(HostsUnder(t, Named(t, "tor4")), "gpu[049-064]");

  // NVLink only in bridged pairs: 256 domains of 2 GPUs, none in a host or above.
  EXPECT_EQ(NvlinkDomainSizes(t), (std::map<int32_t, int>{{2, 256}}));
  for (int32_t h = 0; h < t.num_hosts(); ++h) {
    const DomainId hd = t.host(h);
    ASSERT_EQ(t.host_gpus(h), 8);
    EXPECT_FALSE(t.domain(hd).nvlink);
    ExpectLink(t.domain(hd).link, 20, 3, 1);
    for (int g = 0; g < 8; ++g) {
      const DomainId gpu = t.host_gpu(h, g);
      const DomainId bridge = t.parent(gpu);
      EXPECT_EQ(t.domain(bridge).name, fmt::format("{}/bridge{}", t.domain(hd).name, g / 2));
      EXPECT_TRUE(t.domain(bridge).nvlink);
      ExpectLink(t.domain(bridge).link, 300, 2, 0);
      EXPECT_EQ(t.NvlinkDomain(gpu), bridge);
      const DomainId numa = t.parent(bridge);
      EXPECT_EQ(t.domain(numa).name, fmt::format("{}/numa{}", t.domain(hd).name, g / 4));
      ExpectLink(t.domain(numa).link, 50, 2, 1);
      EXPECT_EQ(t.parent(numa), hd);
      EXPECT_EQ(t.Rail(gpu), -1);
    }
  }

  ExpectPath(t.Between(Gpu(t, "gpu001", 0), Gpu(t, "gpu001", 1)), Named(t, "gpu001/bridge0"), 300, 2, 0);
  ExpectPath(t.Between(Gpu(t, "gpu001", 0), Gpu(t, "gpu001", 3)), Named(t, "gpu001/numa0"), 50, 2, 1);
  ExpectPath(t.Between(Gpu(t, "gpu001", 0), Gpu(t, "gpu001", 4)), Named(t, "gpu001"), 20, 3, 1);
  // Under one ToR: the NIC rate; across ToRs: the 3:1 uplink divides it.
  ExpectPath(t.Between(Gpu(t, "gpu001", 0), Gpu(t, "gpu016", 5)), Named(t, "tor1"), 25, 6, 1);
  ExpectPath(t.Between(Gpu(t, "gpu001", 0), Gpu(t, "gpu017", 0)), spine, 25.0 / 3, 10, 3);
}

// --- Philly (generated by scripts/gen_philly_topology.py, unchanged here) ---

TEST(ExampleSpecs, PhillyFatTree) {
  const Topology t = Load("philly-fat-tree.yaml");
  ASSERT_GT(t.num_domains(), 0);
  EXPECT_EQ(t.num_hosts(), 552);
  EXPECT_EQ(t.total_gpus(), 231 * 8 + 321 * 2);
  EXPECT_EQ(Count(t, Level::kLeaf), 50u);  // 29 racks of 8-GPU hosts (8 each, the last 7), 21 of 2-GPU hosts
  EXPECT_EQ(NvlinkDomainSizes(t), (std::map<int32_t, int>{{2, 321}, {8, 231}}));
  const DomainId rack = Named(t, "rack8-01");
  ExpectLink(t.domain(rack).link, 25, 5, 1, 2);
  ExpectPath(t.Between(Gpu(t, "m2", 0), Gpu(t, "m3", 5)), rack, 25, 5, 1);
  // Across racks the 2:1 ToR uplink halves the 200 Gb/s NIC rate.
  ExpectPath(t.Between(Gpu(t, "m2", 0), Gpu(t, "m20", 0)), t.root(), 12.5, 8.1, 3);
}

// --- Every spec through every writer, and back -------------------------------

struct RoundTripCase {
  std::string file;
  ExportFormat to;
};

std::string CaseName(const ::testing::TestParamInfo<RoundTripCase>& i) {
  std::string n = i.param.file.substr(0, i.param.file.find('.')) + "_" + std::string(ExportFormatName(i.param.to));
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

// Domains above hosts that a format gives back for a spec. Formats keep the
// whole tree above hosts except Slurm's topology.conf in block form (the
// blocks only, under the reader's root) and topology.yaml read by format
// detection (its cluster_default tree only; "tree+block" reads both, below).
int ExpectedDomainsAbove(const Topology& t, const RoundTripCase& c) {
  const bool blocks = !t.domains_at(Level::kBlock).empty();
  if (blocks && c.to == ExportFormat::kSlurmConf) return static_cast<int>(t.domains_at(Level::kBlock).size()) + 1;
  if (blocks && c.to == ExportFormat::kSlurmYaml) return DomainsAboveHosts(t) - static_cast<int>(t.domains_at(Level::kBlock).size());
  return DomainsAboveHosts(t);
}

class ExampleSpecRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(ExampleSpecRoundTrip, WritesAndReadsBack) {
  const RoundTripCase& c = GetParam();
  const Topology t = Load(c.file);
  ASSERT_GT(t.num_domains(), 0);
  auto text = WriteTopology(t, c.to);
  ASSERT_TRUE(text) << text.error().message;
  const std::string source = c.file + "." + std::string(ExportFormatName(c.to));
  auto back = ParseTopology(*text, source);
  ASSERT_TRUE(back) << back.error().message << "\n" << text->substr(0, 2000);

  EXPECT_EQ(HostNames(*back), HostNames(t));
  EXPECT_EQ(DomainsAboveHosts(*back), ExpectedDomainsAbove(t, c));

  switch (c.to) {
    case ExportFormat::kTidalYaml: {
      // Everything: names, levels, parents, links, NVLink, rails, switches, host layouts.
      EXPECT_EQ(testing::Describe(*back), testing::Describe(t));
      ASSERT_EQ(back->num_domains(), t.num_domains());
      for (DomainId d = 0; d < t.num_domains(); ++d) {
        const Domain &a = t.domain(d), &b = back->domain(d);
        SCOPED_TRACE(t.DomainName(d));
        EXPECT_EQ(b.level, a.level);
        EXPECT_EQ(back->DomainName(d), t.DomainName(d));
        EXPECT_EQ(b.parent, a.parent);
        EXPECT_EQ(b.link, a.link);
        EXPECT_EQ(b.nvlink, a.nvlink);
        EXPECT_EQ(b.rails, a.rails);
        EXPECT_EQ(b.switches, a.switches);
        EXPECT_EQ(b.gpu_model, a.gpu_model);
      }
      for (int32_t h = 0; h < t.num_hosts(); ++h) EXPECT_EQ(back->layout(h), t.layout(h));
      break;
    }
    case ExportFormat::kSlurmConf:
      EXPECT_FALSE(back->gpus_known());  // topology.conf has no GPU counts
      if (t.domains_at(Level::kBlock).empty()) {
        EXPECT_EQ(Shape(*back), Shape(t));
        for (DomainId leaf : t.domains_at(Level::kLeaf)) {
          // Rails survive as parallel leaf switches (one per rail) over the same nodes.
          bool found = false;
          for (DomainId b : back->domains_at(Level::kLeaf)) {
            if (HostsUnder(*back, b) != HostsUnder(t, leaf)) continue;
            found = true;
            EXPECT_EQ(back->domain(b).rails, t.domain(leaf).rails);
          }
          EXPECT_TRUE(found) << HostsUnder(t, leaf);
        }
      } else {
        // Block form: the same blocks (NVLink is not in the file).
        std::set<std::string> want, got;
        for (DomainId d : t.domains_at(Level::kBlock)) want.insert(t.domain(d).name + " " + HostsUnder(t, d));
        for (DomainId d : back->domains_at(Level::kBlock)) got.insert(back->domain(d).name + " " + HostsUnder(*back, d));
        EXPECT_EQ(got, want);
      }
      break;
    case ExportFormat::kSlurmYaml: {
      // Read whole ("tree+block"), the tree and the blocks together give the same shape but for NVLink.
      auto whole = ReadSlurmTopologyYaml(*text, source, t.domains_at(Level::kBlock).empty() ? "" : "tree+block");
      ASSERT_TRUE(whole) << whole.error().message;
      auto strip = [](std::set<std::string> s) {
        std::set<std::string> out;
        for (std::string x : s) {
          if (x.ends_with(" nvlink")) x.resize(x.size() - 7);
          out.insert(x);
        }
        return out;
      };
      EXPECT_EQ(strip(Shape(*whole)), strip(Shape(t)));
      break;
    }
    case ExportFormat::kKueue:
    case ExportFormat::kKai:
    case ExportFormat::kVolcano:
      // Levels are labelled (or annotated) exactly, NVLink blocks marked; rails and GPU counts are not written.
      EXPECT_EQ(Shape(*back), Shape(t));
      EXPECT_FALSE(back->gpus_known());
      break;
  }
}

std::vector<RoundTripCase> AllCases() {
  std::vector<RoundTripCase> out;
  for (const char* f : {"dgx-h100-superpod.yaml", "gb200-nvl72.yaml", "roce-2tier-oversubscribed.yaml", "philly-fat-tree.yaml"})
    for (ExportFormat to : {ExportFormat::kTidalYaml, ExportFormat::kSlurmConf, ExportFormat::kSlurmYaml, ExportFormat::kKueue,
                            ExportFormat::kKai, ExportFormat::kVolcano})
      out.push_back({f, to});
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllWriters, ExampleSpecRoundTrip, ::testing::ValuesIn(AllCases()), CaseName);

// Known issue, disabled until fixed: a domain read from Slurm (or any
// FabricGraph format) with parallel switches is named by their compressed list
// ("su1-[1-4]"); WriteTidalYaml writes that as `name:`, which ReadTidalYaml
// takes literally (only `names:` expands) — once it expanded it, and the one
// rail group of 144 hosts read back as 4 leaves of 36.
TEST(ExampleSpecs, MergedSwitchNamesSurviveTidalYaml) {
  for (const char* file : {"gb200-nvl72.yaml", "dgx-h100-superpod.yaml"}) {
    SCOPED_TRACE(file);
    const Topology t = Load(file);
    auto yaml = WriteTopology(t, ExportFormat::kSlurmYaml);
    ASSERT_TRUE(yaml);
    auto slurm = ParseTopology(*yaml, "via.yaml");
    ASSERT_TRUE(slurm) << slurm.error().message;
    auto again = ParseTopology(WriteTidalYaml(*slurm), "again.yaml");
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(DomainsAboveHosts(*again), DomainsAboveHosts(*slurm));
    EXPECT_TRUE(Shape(*again) == Shape(*slurm));
  }
}

}  // namespace
}  // namespace tidal::topo
