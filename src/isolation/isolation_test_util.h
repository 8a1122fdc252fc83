// Shared by the isolation tests: an 8 x H100 node as `nvidia-smi topo -m`
// prints it (the DGX H100 fixture's GPU rows without its NIC columns: two
// NUMA nodes of 112 CPUs with hyper-threads, GPUs 0-3 on node 0), and its
// layout with an inference reserve and a checkpoint device.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "isolation/cgroup.h"

namespace tidal::isolation::testing {

inline std::string H100Matrix() {
  std::string t = "\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n";
  for (int g = 0; g < 8; ++g) {
    t += "GPU" + std::to_string(g);
    for (int c = 0; c < 8; ++c) t += c == g ? "\t X " : "\tNV18";
    t += g < 4 ? "\t0-55,112-167\t0\t\tN/A\n" : "\t56-111,168-223\t1\t\tN/A\n";
  }
  return t;
}

// Reserve: four cores of node 0 and their hyper-thread siblings.
inline NodeLayout H100Layout(const std::string& reserve = "52-55,164-167") {
  auto a = topo::ReadNvidiaSmiAffinity(H100Matrix(), "h100.txt");
  EXPECT_TRUE(a.has_value()) << a.error().message;
  if (!a) return {};
  NodeLayoutOptions o;
  o.inference_reserved_cpus = reserve;
  o.checkpoint_device = BlockDevice{259, 0, "/dev/nvme1n1"};
  auto n = NodeLayoutFromAffinity(*a, o);
  EXPECT_TRUE(n.has_value()) << n.error().message;
  return n ? *n : NodeLayout{};
}

inline ContainerRequest Request(std::string name, Tier tier, WorkloadKind kind, double cpus, int64_t mib, std::vector<int> gpus,
                                int64_t mbps = 0) {
  ContainerRequest c;
  c.name = std::move(name);
  c.tier = tier;
  c.kind = kind;
  c.cpus = cpus;
  c.memory_mib = mib;
  c.gpus = std::move(gpus);
  c.checkpoint_write_mbps = mbps;
  return c;
}

}  // namespace tidal::isolation::testing
