// Test helpers shared by the sim tests that charge placements: a 2-leaf x
// 2-host x 8-GPU fat tree with a 2:1 oversubscribed spine, and a whole-GPU
// trace job.
#pragma once

#include <memory>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "topology/readers/tidal_yaml.h"
#include "workload/job.h"

namespace tidal::sim::testing {

inline constexpr const char* kFatTree = R"(version: 1
links:
  leaf: {gbps: 50, latency_us: 5, hops: 1, oversubscription: 2}
  spine: {gbps: 50, latency_us: 8.1, hops: 3}
host_types:
  hgx: {gpus: 8, nvlink: true, link: {gbps: 450, latency_us: 3, hops: 1}}
root:
  level: spine
  name: spine
  children:
    - level: leaf
      names: leaf[1-2]
      hosts: h[1-4]
      host_type: hgx
)";

inline std::shared_ptr<const topo::Topology> FatTree() {
  auto t = topo::ReadTidalYaml(kFatTree, "fat.yaml");
  EXPECT_TRUE(t) << t.error().message;
  return std::make_shared<const topo::Topology>(std::move(*t));
}

inline Job MakeJob(JobId id, int64_t submit, int32_t gpus, int64_t duration) {
  Job j;
  j.id = id;
  j.name = fmt::format("j{}", id);
  j.source = fmt::format("test:{}", id);
  j.num_gpu = gpus;
  j.gpu_milli = kMilliPerGpu;
  j.single_node = false;
  j.submit_time_s = submit;
  j.duration_s = duration;
  return j;
}

}  // namespace tidal::sim::testing
