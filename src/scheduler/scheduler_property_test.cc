// Property: whatever jobs arrive and leave, under every policy, the scheduler
// never over-allocates a device, a node's CPU or memory, and releasing every
// job gives back exactly the capacity the cluster started with.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "plugins/registry.h"
#include "scheduler/scheduler.h"

namespace tidal {
namespace {

RC_GTEST_PROP(SchedulerProperty, AnyPlaceReleaseSequenceKeepsCapacityExact, ()) {
  const auto& names = plugins::PolicyNames();
  const std::string policy = names[static_cast<size_t>(*rc::gen::inRange<int>(0, static_cast<int>(names.size())))];
  auto cluster = ClusterState::Build({{"g8", 96000, 393216, 8, "G2"},
                                      {"t4", 16000, 65536, 2, "T4"},
                                      {"v1", 8000, 32768, 1, "V100"},
                                      {"cpu", 32000, 131072, 0, ""}});
  RC_ASSERT(cluster.has_value());
  const int64_t total_milli = cluster->total_gpu_milli();

  // Jobs of every shape the trace has: CPU-only, sharing, whole, multi-GPU, gangs, typed.
  const int njobs = *rc::gen::inRange(1, 60);
  std::vector<Job> jobs(static_cast<size_t>(njobs));
  for (int i = 0; i < njobs; ++i) {
    Job& j = jobs[static_cast<size_t>(i)];
    j.id = i;
    j.name = "j" + std::to_string(i);
    j.cpu_milli = *rc::gen::inRange<int64_t>(0, 40000);
    j.memory_mib = *rc::gen::inRange<int64_t>(0, 100000);
    const int kind = *rc::gen::inRange(0, 5);
    if (kind == 0) {
      j.num_gpu = 0;
    } else if (kind == 1) {
      j.num_gpu = 1;
      j.gpu_milli = *rc::gen::inRange(1, 1000);
    } else {
      j.num_gpu = *rc::gen::inRange(1, 11);
      j.gpu_milli = 1000;
      j.single_node = kind != 4;
    }
    if (j.num_gpu > 0 && *rc::gen::inRange(0, 4) == 0) j.gpu_spec = {*rc::gen::element<std::string>("T4", "G2", "V100")};
  }

  // FGD scores against typical pods drawn from the same jobs.
  auto typical = BuildTypicalPods(jobs, cluster->models());
  RC_ASSERT(typical.has_value());
  auto profile = plugins::MakePolicyProfile(policy, std::make_shared<FragmentationModel>(std::move(*typical)));
  RC_ASSERT(profile.has_value());
  Scheduler sched(std::move(*cluster), std::move(*profile), *rc::gen::arbitrary<uint64_t>());

  std::vector<const Job*> running;
  for (const Job& j : jobs) {
    if (!running.empty() && *rc::gen::inRange(0, 3) == 0) {
      const size_t k = static_cast<size_t>(*rc::gen::inRange<int>(0, static_cast<int>(running.size())));
      RC_ASSERT(sched.Release(*running[k]).has_value());
      running.erase(running.begin() + static_cast<long>(k));
    }
    auto placed = sched.ScheduleAndBind(j);
    if (placed) {
      running.push_back(&j);
      RC_ASSERT((*placed)->TotalGpuMilli() == j.TotalGpuMilli());
      for (const auto& a : (*placed)->assignments) {
        if (j.num_gpu > 0 && !j.gpu_spec.empty()) {
          RC_ASSERT(j.gpu_spec.front() == sched.cluster().models().Name(sched.cluster().gpu_model(a.node)));
        }
        if (j.single_node) RC_ASSERT((*placed)->assignments.size() == 1u);
      }
    } else {
      RC_ASSERT(placed.error().code == ErrorCode::kUnschedulable || placed.error().code == ErrorCode::kUnresolvable);
    }
    RC_ASSERT(sched.cluster().CheckInvariants().has_value());
  }
  for (const Job* j : running) RC_ASSERT(sched.Release(*j).has_value());
  RC_ASSERT(sched.cluster().total_gpu_milli_free() == total_milli);
  RC_ASSERT(sched.cluster().CheckInvariants().has_value());
}

// A fork (Scheduler::Fork, for forward runs of the queue) with fresh plugins
// of the same policy decides exactly as the scheduler it was forked from:
// the same placement or the same refusal for every later job, random
// placers and GpuClustering's per-node shape counts included.
RC_GTEST_PROP(SchedulerProperty, AForkDecidesAsTheOriginal, ()) {
  const auto& names = plugins::PolicyNames();
  const std::string policy = names[static_cast<size_t>(*rc::gen::inRange<int>(0, static_cast<int>(names.size())))];
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 6; ++i) nodes.push_back({fmt::format("n{}", i), 32000, 131072, *rc::gen::element(2, 4, 8), i % 2 ? "A" : "B"});
  auto cluster = ClusterState::Build(nodes);
  RC_ASSERT(cluster.has_value());
  const int njobs = *rc::gen::inRange(2, 50);
  std::vector<Job> jobs(static_cast<size_t>(njobs));
  for (int i = 0; i < njobs; ++i) {
    Job& j = jobs[static_cast<size_t>(i)];
    j.id = i;
    j.name = fmt::format("j{}", i);
    j.cpu_milli = *rc::gen::inRange<int64_t>(0, 8000);
    j.memory_mib = 1024;
    j.num_gpu = *rc::gen::inRange(1, 5);
    j.gpu_milli = *rc::gen::element(1000, 1000, 500, 250);
    if (j.gpu_milli < 1000) j.num_gpu = 1;
    j.single_node = j.gpu_milli < 1000 || *rc::gen::arbitrary<bool>();
  }
  auto typical = BuildTypicalPods(jobs, cluster->models());
  RC_ASSERT(typical.has_value());
  auto frag = std::make_shared<FragmentationModel>(std::move(*typical));
  auto profile = plugins::MakePolicyProfile(policy, frag);
  RC_ASSERT(profile.has_value());
  Scheduler sched(std::move(*cluster), std::move(*profile), *rc::gen::arbitrary<uint64_t>());
  const size_t split = static_cast<size_t>(*rc::gen::inRange(0, njobs));
  std::vector<const Job*> running;
  for (size_t i = 0; i < split; ++i) {
    if (!running.empty() && *rc::gen::inRange(0, 4) == 0) {
      RC_ASSERT(sched.Release(*running.back()).has_value());
      running.pop_back();
    }
    if (sched.ScheduleAndBind(jobs[i])) running.push_back(&jobs[i]);
  }
  auto fresh = plugins::MakePolicyProfile(policy, frag);
  RC_ASSERT(fresh.has_value());
  Scheduler fork = sched.Fork(std::move(*fresh), [&](JobId id) { return &jobs[static_cast<size_t>(id)]; });
  for (size_t i = split; i < jobs.size(); ++i) {
    auto a = sched.ScheduleAndBind(jobs[i]);
    auto b = fork.ScheduleAndBind(jobs[i]);
    RC_ASSERT(a.has_value() == b.has_value());
    if (!a) {
      RC_ASSERT(a.error().code == b.error().code);
      continue;
    }
    RC_ASSERT((*a)->assignments.size() == (*b)->assignments.size());
    for (size_t k = 0; k < (*a)->assignments.size(); ++k) {
      RC_ASSERT((*a)->assignments[k].node == (*b)->assignments[k].node);
      RC_ASSERT((*a)->assignments[k].gpus == (*b)->assignments[k].gpus);
      RC_ASSERT((*a)->assignments[k].gpu_milli == (*b)->assignments[k].gpu_milli);
    }
  }
}

}  // namespace
}  // namespace tidal
