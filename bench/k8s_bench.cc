// The extender's cost per kube-scheduler call on clusters of N 8-GPU nodes
// (32 per leaf): filter of a new lone pod (tidal places it — the cordon
// mask over non-candidates is O(N) — then the pod is forgotten so every
// iteration sees the same cluster), a 4-pod gang, and the whole HTTP body
// path (parse, decide, Go-exact encode) with nodeCacheCapable (NodeNames)
// and without (every Node object in the request and the answer).
//   build/bench/k8s_bench --benchmark_filter=. [--benchmark_repetitions=3]
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include "adapters/k8s/extender_http.h"
#include "plugins/registry.h"

namespace tidal::k8s {
namespace {

ojson Nodes(int n) {
  ojson items = ojson::array();
  for (int i = 0; i < n; ++i) {
    items.push_back(ojson::parse(fmt::format(
        R"({{"metadata":{{"name":"n{}","labels":{{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","nvidia.com/gpu.count":"8","fabric.topograph.run/tier-0":"leaf{}","fabric.topograph.run/tier-1":"spine{}"}}}},)"
        R"("spec":{{}},"status":{{"allocatable":{{"cpu":"96","memory":"1Ti","nvidia.com/gpu":"8","pods":"110"}},"capacity":{{"cpu":"96","memory":"1Ti","nvidia.com/gpu":"8","pods":"110"}}}}}})",
        i, i / 32, i / 512)));
  }
  return {{"kind", "NodeList"}, {"apiVersion", "v1"}, {"metadata", ojson::object()}, {"items", items}};
}

ojson Pod(const std::string& uid, int gpus, const std::string& gang = "", int size = 0) {
  ojson labels = ojson::object();
  if (!gang.empty()) labels = {{"tidal.io/gang", gang}, {"tidal.io/gang-size", std::to_string(size)}};
  return {{"metadata", {{"name", uid}, {"namespace", "bench"}, {"uid", uid}, {"labels", labels}}},
          {"spec", {{"containers", ojson::array({{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}})}}}};
}

struct Setup {
  explicit Setup(int n) : list(Nodes(n)) {
    auto imported = ImportNodes(list, "bench");
    if (!imported) throw std::runtime_error(imported.error().message);
    auto cluster = ClusterState::Build(imported->nodes);
    if (!cluster || !cluster->AttachTopology(imported->topology)) throw std::runtime_error("cluster");
    auto profile = plugins::MakePolicyProfile("topo", nullptr);
    if (!profile) throw std::runtime_error(profile.error().message);
    core = std::make_unique<PodScheduler>(Scheduler(std::move(*cluster), std::move(*profile), 1), 120);
    ext = std::make_unique<Extender>(*core, [](const ExtenderBindingArgs&) { return Ok(); });
    for (const ojson& item : list["items"]) names.push_back(item["metadata"]["name"].get<std::string>());
  }
  ojson list;
  std::vector<std::string> names;
  std::unique_ptr<PodScheduler> core;
  std::unique_ptr<Extender> ext;
};

void BM_FilterLonePod(benchmark::State& state) {
  Setup s(static_cast<int>(state.range(0)));
  int64_t i = 0;
  for (auto _ : state) {
    const std::string uid = fmt::format("p{}", i++);
    auto r = s.ext->Filter({.pod = Pod(uid, 8), .node_names = s.names}, 0);
    benchmark::DoNotOptimize(r);
    s.core->Forget(uid);
  }
  state.SetLabel(fmt::format("{} nodes", state.range(0)));
}
BENCHMARK(BM_FilterLonePod)->Arg(512)->Arg(2048)->Arg(8192)->Unit(benchmark::kMicrosecond);

void BM_FilterGangOfFour(benchmark::State& state) {
  Setup s(static_cast<int>(state.range(0)));
  int64_t i = 0;
  for (auto _ : state) {
    const std::string gang = fmt::format("g{}", i++);
    for (int k = 0; k < 4; ++k) benchmark::DoNotOptimize(s.ext->Filter({.pod = Pod(gang + "-" + std::to_string(k), 8, gang, 4), .node_names = s.names}, 0));
    for (int k = 0; k < 4; ++k) s.core->Forget(gang + "-" + std::to_string(k));
  }
}
BENCHMARK(BM_FilterGangOfFour)->Arg(512)->Arg(2048)->Arg(8192)->Unit(benchmark::kMicrosecond);

// The HTTP body path: what one filter call costs tidal end to end.
void BM_FilterBody(benchmark::State& state) {
  Setup s(static_cast<int>(state.range(0)));
  const bool node_list = state.range(1) != 0;
  int64_t i = 0;
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string uid = fmt::format("p{}", i++);
    state.PauseTiming();
    ExtenderArgs args{.pod = Pod(uid, 8)};
    if (node_list) {
      args.nodes = s.list;
    } else {
      args.node_names = s.names;
    }
    const std::string body = Encode(args);
    bytes = body.size();
    state.ResumeTiming();
    auto reply = HandleExtender(*s.ext, "filter", body, 0);
    benchmark::DoNotOptimize(reply);
    state.PauseTiming();
    s.core->Forget(uid);
    state.ResumeTiming();
  }
  state.SetLabel(fmt::format("{} nodes, {}, request {} KiB", state.range(0), node_list ? "NodeList" : "NodeNames", bytes / 1024));
}
BENCHMARK(BM_FilterBody)->Args({512, 0})->Args({512, 1})->Args({2048, 0})->Args({2048, 1})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tidal::k8s

BENCHMARK_MAIN();
