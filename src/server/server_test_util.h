// The daemon tests' cluster: 4 hosts x 8 H100 (32 GPUs), tenants ads and
// search with 16 GPUs of floor each, the tidal queue, bestfit, speed 1;
// `trace` jobs arrive on their own. Tests only.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "server/daemon_config.h"
#include "tenancy/tenants_file.h"

namespace tidal::server::testing {

inline DaemonConfig SmallDaemonConfig(std::string digest, std::vector<Job> trace = {}) {
  DaemonConfig c;
  c.source = "test";
  c.digest = std::move(digest);
  c.name = "test";
  for (const char* name : {"h0", "h1", "h2", "h3"}) c.nodes.push_back({.name = name, .gpu_count = 8, .gpu_model = "H100"});
  c.speed = 1;
  c.placer = "bestfit";
  c.queue = QueuePolicy::kTidal;
  auto t = tenancy::ProportionalTenants({{"ads", 1}, {"search", 1}}, 32);
  EXPECT_TRUE(t) << t.error().message;
  c.tenants = std::make_shared<const tenancy::TenantTree>(std::move(*t));
  c.trace = std::move(trace);
  c.start_estimate_samples = 4;
  return c;
}

}  // namespace tidal::server::testing
