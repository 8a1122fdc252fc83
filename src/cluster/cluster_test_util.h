// Test helpers shared by the cluster module's tests: the expected free
// aggregates of topology domains, checked with the invariants. Tests only.
#pragma once

#include <vector>

#include <gtest/gtest.h>

#include "cluster/cluster_state.h"

namespace tidal::testing {

struct Want {
  topo::DomainId d;
  int gpus, hosts, max;  // hosts, max < 0: not checked
};

inline void ExpectAggregates(const ClusterState& c, const std::vector<Want>& want, const char* step) {
  SCOPED_TRACE(step);
  for (const Want& w : want) {
    EXPECT_EQ(c.domain_free_gpus(w.d), w.gpus) << c.topology().DomainName(w.d);
    if (w.hosts >= 0) {
      EXPECT_EQ(c.domain_free_hosts(w.d), w.hosts) << c.topology().DomainName(w.d);
    }
    if (w.max >= 0) {
      EXPECT_EQ(c.domain_max_host_free(w.d), w.max) << c.topology().DomainName(w.d);
    }
  }
  EXPECT_TRUE(c.CheckInvariants().has_value()) << c.CheckInvariants().error().message;
}

}  // namespace tidal::testing
