// Reading a tenant tree: a YAML file (docs/tenancy.md), or "proportional" —
// one tenant per value of the trace's tenant column with floors in
// proportion to its GPU-hours.
//
//   version: 1
//   tenants:
//     - name: org                     # the root (no parent)
//     - name: ads
//       parent: org
//       weight: 2                     # fair-share weight, default 1
//       tier: standard                # default tier of its jobs
//       quota:
//         gpu: {nominal: 64, borrowing_limit: 32, lending_limit: 16}   # GPUs
//         gpu/H100: {nominal: 64}     # GPUs of one model
//         cpu: {nominal: 512}         # cores
//         memory: {nominal: 4096Gi}   # Mi, Gi or Ti; a bare number is MiB
//     - name: ads/ranking
//       parent: ads
//       groups: [11cb48]              # trace group values that mean this tenant
//
// GPU quantities may be fractional (0.5 GPU = 500 milli-GPU).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "tenancy/tenant_tree.h"

namespace tidal::tenancy {

Result<std::vector<TenantSpec>> ParseTenantsYaml(const std::string& text, const std::string& source);
Result<TenantTree> ReadTenantsFile(const std::string& path);

// Demand of one group: its GPU-seconds over the trace.
struct GroupUsage {
  std::string group;
  double gpu_seconds = 0;
};

// A root "cluster" with one leaf per group, nominal GPU floors in proportion
// to the groups' GPU-seconds, in whole GPUs summing exactly to `total_gpus`
// (largest remainder; every group that asked for GPU time gets at least one
// GPU when there are enough). No borrowing or lending limits.
Result<TenantTree> ProportionalTenants(std::vector<GroupUsage> groups, int64_t total_gpus);

// The same tree with `leaves` added (their parent must exist, the root when
// empty): tenants a driver adds to a given tree, e.g. inference services.
Result<TenantTree> WithLeaves(const TenantTree& tree, std::vector<TenantSpec> leaves);

// The same tree with `tenant`'s default tier set to `tier` (e.g. a core
// project whose floor is hard: guaranteed-tier jobs run within it and no other
// tenant ever preempts them). `tenant` is a name or a group alias.
Result<TenantTree> WithTier(const TenantTree& tree, const std::string& tenant, Tier tier);

// The same tree with every leaf's borrowing limit set to 0: each tenant
// runs only within its floor (static partitions, the department wall).
Result<TenantTree> WithoutBorrowing(const TenantTree& tree);

}  // namespace tidal::tenancy
