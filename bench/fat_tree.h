// The 100k-GPU fat tree the benchmarks run on: 12,500 hosts x 8 NVLink H100
// GPUs, 32 hosts per leaf, 16 leaves per spine group (390 full leaves + one
// of 20 hosts; 25 spine groups, the last partial), one core. Also the job
// sizes the benchmarks' loaded states are made of, so that every benchmark
// on this tree sees the same mix.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cluster/cluster_state.h"
#include "common/rng.h"
#include "topology/builder.h"
#include "topology/topology.h"

namespace tidal::bench {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
inline double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// CPU time of this thread in µs. On a shared machine wall-clock tails are
// mostly other processes' time slices; CPU time shows what the code costs.
inline double ThreadCpuUs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

inline double LoadAverage1m() {
  double l = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &l) != 1) l = -1;
    std::fclose(f);
  }
  return l;
}

// "a,b,,c" -> {"a", "b", "c"}: the benchmarks' list flags.
inline std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= s.size()) {
    const size_t e = s.find(',', b);
    const std::string item = s.substr(b, e == std::string::npos ? std::string::npos : e - b);
    if (!item.empty()) out.push_back(item);
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return out;
}


inline constexpr int kHosts = 12500;
inline constexpr int kGpusPerHost = 8;
inline constexpr int kHostsPerLeaf = 32;
inline constexpr int kLeavesPerSpine = 16;
inline constexpr int64_t kHostCpuMilli = 128'000;
inline constexpr int64_t kHostMemMib = 1'048'576;  // 1 TiB
// What a job asks per GPU besides the GPU (a quarter of a host's CPU and memory share).
inline constexpr int64_t kCpuPerGpu = 4'000;
inline constexpr int64_t kMemPerGpu = 32'768;

struct Fabric {
  int leaves = 0;
  int spine_groups = 0;
};

// The empty cluster with its topology attached. `who` names the benchmark
// in the message it exits with if anything fails.
inline ClusterState BuildFatTree(Fabric& fabric, const char* who) {
  auto die = [who](const std::string& what) {
    std::fprintf(stderr, "%s: fat tree: %s\n", who, what.c_str());
    std::exit(1);
  };
  std::vector<NodeSpec> nodes;
  std::vector<topo::NodeGpus> ng;
  nodes.reserve(kHosts);
  for (int i = 0; i < kHosts; ++i) {
    nodes.push_back({fmt::format("n{:05d}", i), kHostCpuMilli, kHostMemMib, kGpusPerHost, "H100"});
    ng.push_back({nodes.back().name, kGpusPerHost, "H100"});
  }
  auto cluster = ClusterState::Build(nodes);
  if (!cluster) die(cluster.error().message);

  using topo::Level;
  topo::TopologyBuilder b("100k-GPU fat tree");
  const auto core = b.AddDomain(Level::kCore, "core", topo::kNoDomain);
  topo::DomainId spine = topo::kNoDomain;
  const int leaves = (kHosts + kHostsPerLeaf - 1) / kHostsPerLeaf;
  for (int l = 0; l < leaves; ++l) {
    if (l % kLeavesPerSpine == 0) {
      spine = b.AddDomain(Level::kSpine, fmt::format("sg{:02d}", l / kLeavesPerSpine), core);
      ++fabric.spine_groups;
    }
    const auto leaf = b.AddDomain(Level::kLeaf, fmt::format("leaf{:03d}", l), spine);
    ++fabric.leaves;
    for (int h = l * kHostsPerLeaf; h < std::min(kHosts, (l + 1) * kHostsPerLeaf); ++h) {
      b.AddHost(nodes[static_cast<size_t>(h)].name, leaf,
                topo::HostLayout{.gpus = kGpusPerHost, .gpu_model = "H100", .nvlink = true});
    }
  }
  auto built = std::move(b).Build();
  if (!built) die(built.error().message);
  auto t = topo::Materialize(*built, ng);
  if (!t) die(t.error().message);
  if (auto s = cluster->AttachTopology(std::make_shared<const topo::Topology>(std::move(*t))); !s) die(s.error().message);
  return std::move(*cluster);
}

// GPUs of one job of the loaded states' mix, by count: mostly small pods
// (1/2/4 GPUs), some whole hosts, a few multi-host gangs of 16-64 GPUs.
inline int32_t DrawJobGpus(Rng& rng) {
  const uint64_t u = rng.Uniform(1000);
  if (u < 400) return 1;
  if (u < 600) return 2;
  if (u < 800) return 4;
  if (u < 920) return 8;
  if (u < 960) return 16;
  if (u < 985) return 32;
  return 64;
}

}  // namespace tidal::bench
