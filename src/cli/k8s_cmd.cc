// `tidal k8s run`: tidal drives a Kubernetes cluster — the scheduling-gate
// controller (pods gated with tidal.io/admission are admitted whole, pinned
// to the nodes tidal chose) and the kube-scheduler extender (filter,
// prioritize, bind, preempt under --prefix), sharing one PodScheduler.
// docs/kubernetes.md has the set-up; data/k8s/scheduler-config.yaml is the
// KubeSchedulerConfiguration that points kube-scheduler at the extender.
//
// Exit codes: 0 stopped by SIGINT/SIGTERM, 2 bad input or the API server
// unusable at start. While running, a controller that loses the API server
// says so and retries every 5 s.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#include <httplib.h>

#include <fmt/format.h>

#include "adapters/k8s/extender_http.h"
#include "adapters/k8s/gate_controller.h"
#include "cli/commands.h"
#include "plugins/registry.h"

namespace tidal::cli {
namespace {

struct K8sArgs {
  std::string api = "http://127.0.0.1:8001";
  std::string token_file, ca_file;
  std::string listen = "127.0.0.1:8089";
  std::string prefix = "/k8s/extender";
  std::string policy = "topo";
  uint64_t seed = 1;
  int64_t reservation_ttl_s = 120;
  bool no_gates = false;
};

int Fail(const std::string& msg) {
  fmt::print(stderr, "tidal k8s: {}\n", msg);
  return 2;
}

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int Run(const K8sArgs& a) {
  k8s::KubeApiConfig api;
  if (a.api == "in-cluster") {
    auto c = k8s::InClusterConfig();
    if (!c) return Fail(c.error().message);
    api = *c;
  } else {
    api.server = a.api;
    if (!a.token_file.empty()) {
      std::ifstream in(a.token_file);
      if (!in) return Fail(fmt::format("--token-file {}: cannot read it", a.token_file));
      std::getline(in, api.token);
    }
    api.ca_file = a.ca_file;
  }
  const auto colon = a.listen.rfind(':');
  if (colon == std::string::npos) return Fail(fmt::format("--listen '{}' must read HOST:PORT", a.listen));
  int port = -1;
  try {
    port = std::stoi(a.listen.substr(colon + 1));
  } catch (...) {
  }
  if (port < 0 || port > 65535) return Fail(fmt::format("--listen '{}': the port must be 0..65535", a.listen));

  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  auto client = k8s::KubeClient::Connect(api);
  if (!client) return Fail(client.error().message);
  auto nodes = (*client)->Get("/api/v1/nodes");
  if (!nodes) return Fail(fmt::format("listing the nodes: {}", nodes.error().message));
  auto imported = k8s::ImportNodes(*nodes, api.server + "/api/v1/nodes");
  if (!imported) return Fail(imported.error().message);
  for (const std::string& note : imported->notes) fmt::print(stderr, "tidal k8s: note: {}\n", note);
  auto cluster = ClusterState::Build(imported->nodes);
  if (!cluster) return Fail(cluster.error().message);
  if (Status s = cluster->AttachTopology(imported->topology); !s) return Fail(s.error().message);
  auto profile = plugins::MakePolicyProfile(a.policy, nullptr);
  if (!profile) return Fail(profile.error().message);
  k8s::PodScheduler core(Scheduler(std::move(*cluster), std::move(*profile), a.seed), a.reservation_ttl_s);
  std::mutex mu;
  k8s::KubeClient& kube = **client;
  k8s::Extender extender(core, [&kube](const k8s::ExtenderBindingArgs& b) -> Status {
    const k8s::ojson binding = {{"apiVersion", "v1"},
                                {"kind", "Binding"},
                                {"metadata", {{"name", b.pod_name}, {"namespace", b.pod_namespace}, {"uid", b.pod_uid}}},
                                {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", b.node}}}};
    auto r = kube.Post(fmt::format("/api/v1/namespaces/{}/pods/{}/binding", b.pod_namespace, b.pod_name), binding);
    if (!r) return std::unexpected(r.error());
    return Ok();
  });
  httplib::Server http;
  k8s::MountExtender(http, a.prefix, extender, mu, Now);
  http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  const std::string host = a.listen.substr(0, colon);
  const int bound = port == 0 ? http.bind_to_any_port(host.c_str()) : (http.bind_to_port(host.c_str(), port) ? port : -1);
  if (bound < 0) return Fail(fmt::format("cannot listen on {}", a.listen));
  std::thread serving([&] { http.listen_after_bind(); });
  fmt::print("tidal k8s: {} nodes ({} GPUs) from {}; extender on http://{}:{}{}/{{filter,prioritize,bind,preempt}}; gates {}\n",
             imported->nodes.size(), core.scheduler().cluster().total_gpus(), api.server, host, bound, a.prefix,
             a.no_gates ? "off" : fmt::format("on ({})", k8s::kAdmissionGate));
  std::fflush(stdout);

  std::atomic<bool> stop{false};
  std::thread signals([&] {
    int sig = 0;
    sigwait(&sigs, &sig);
    fmt::print(stderr, "tidal k8s: {} received, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    stop = true;
    http.stop();
  });
  if (!a.no_gates) {
    k8s::GateController gates(kube, core, mu, Now);
    size_t reported = 0;
    while (!stop) {
      Status s = gates.Run(stop, 5);
      for (; reported < gates.problems().size(); ++reported) fmt::print(stderr, "tidal k8s: {}\n", gates.problems()[reported]);
      if (s || stop) break;
      fmt::print(stderr, "tidal k8s: the gate controller stopped: {}; retrying in 5 s\n", s.error().message);
      for (int i = 0; i < 50 && !stop; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      reported = gates.problems().size();
    }
  }
  serving.join();
  if (signals.joinable()) {
    pthread_kill(signals.native_handle(), SIGTERM);
    signals.join();
  }
  return 0;
}

}  // namespace

void RegisterK8sCommands(CLI::App& app) {
  auto* k8s = app.add_subcommand("k8s", "tidal on Kubernetes: the scheduling-gate controller and the kube-scheduler extender");
  k8s->require_subcommand(1);
  auto args = std::make_shared<K8sArgs>();
  auto* run = k8s->add_subcommand("run", "admit gated pods and answer kube-scheduler's extender calls until SIGINT/SIGTERM");
  run->add_option("--api", args->api, "the API server: a `kubectl proxy` URL, an https:// URL, or in-cluster")->capture_default_str();
  run->add_option("--token-file", args->token_file, "a bearer token for --api");
  run->add_option("--ca-file", args->ca_file, "the CA of an https:// --api");
  run->add_option("--listen", args->listen, "HOST:PORT of the extender (port 0: any free port)")->capture_default_str();
  run->add_option("--prefix", args->prefix, "the extender's URL prefix (urlPrefix in the KubeSchedulerConfiguration)")->capture_default_str();
  run->add_option("--policy", args->policy, "tidal's placement policy (`tidal sim queue --help` lists them)")->capture_default_str();
  run->add_option("--seed", args->seed, "the scheduler's random seed")->capture_default_str();
  run->add_option("--reservation-ttl-s", args->reservation_ttl_s, "release a placement no pod is bound to after this long")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{86400}));
  run->add_flag("--no-gates", args->no_gates, "the extender only, no gate controller");
  run->callback([args] { SetExitCode(Run(*args)); });
}

}  // namespace tidal::cli
