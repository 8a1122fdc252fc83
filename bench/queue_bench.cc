// Speed of the queue experiment: replay the first N Philly jobs (by submit
// time) with FIFO + EASY backfill and the BestFit placer, on the full
// 2,490-GPU machine list (where this trace hardly queues) and on a 480-GPU
// subset (40 2-GPU + 50 8-GPU machines) where thousands of jobs wait and
// backfill does real work. FIFO on the same inputs is the baseline.
//
//   build-queue/bench/queue_bench --benchmark_counters_tabular=true
#include <sys/resource.h>

#include <cstdio>
#include <filesystem>

#include <benchmark/benchmark.h>

#include "sim/queue_sim.h"
#include "workload/traces/philly.h"

namespace {

struct Inputs {
  std::vector<tidal::NodeSpec> full;
  std::vector<tidal::NodeSpec> small;  // 480 GPUs
  std::vector<tidal::Job> jobs;
};

const Inputs& Load() {
  static const Inputs in = [] {
    const std::string dir = std::string(TIDAL_SHARED_DIR) + "/traces/philly";
    auto nodes = tidal::traces::ReadPhillyMachines(dir + "/machine_list/cluster_machine_list.csv");
    auto jobs = tidal::traces::ReadPhillyJobs(dir + "/pollux_philly_jobs.csv");
    if (!nodes || !jobs) {
      std::fprintf(stderr, "queue_bench: cannot read the Philly trace under %s\n", dir.c_str());
      std::exit(1);
    }
    Inputs r;
    r.full = std::move(*nodes);
    int twos = 0, eights = 0;
    for (const auto& n : r.full) {
      if (n.gpu_count == 2 && twos < 40) ++twos, r.small.push_back(n);
      if (n.gpu_count == 8 && eights < 50) ++eights, r.small.push_back(n);
    }
    r.jobs = std::move(jobs->jobs);
    return r;
  }();
  return in;
}

void BM_QueueReplay(benchmark::State& state, tidal::QueuePolicy queue, bool small) {
  const Inputs& in = Load();
  tidal::sim::QueueSimOptions o;
  o.policy = "bestfit";
  o.queue = queue;
  o.limit = state.range(0);
  int64_t jobs = 0;
  double delay = 0;
  for (auto _ : state) {
    auto r = tidal::sim::RunQueueSim(small ? in.small : in.full, in.jobs, o);
    if (!r) {
      state.SkipWithError(r.error().message.c_str());
      return;
    }
    jobs = r->jobs_total;
    delay = r->queue_delay_s.mean;
    benchmark::DoNotOptimize(r);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["jobs"] = static_cast<double>(jobs);
  state.counters["jobs_per_s"] =
      benchmark::Counter(static_cast<double>(jobs) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["mean_delay_s"] = delay;
  state.counters["peak_rss_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->Arg(10000)->Arg(82247)->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK_CAPTURE(BM_QueueReplay, fifo_full, tidal::QueuePolicy::kFifo, false)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_QueueReplay, backfill_full, tidal::QueuePolicy::kFifoBackfill, false)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_QueueReplay, fifo_480gpu, tidal::QueuePolicy::kFifo, true)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_QueueReplay, backfill_480gpu, tidal::QueuePolicy::kFifoBackfill, true)->Apply(Sizes);

}  // namespace

BENCHMARK_MAIN();
