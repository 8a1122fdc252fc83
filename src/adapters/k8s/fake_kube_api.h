// Test-only: a small in-process Kubernetes API server — the calls tidal's
// gate controller makes, with the shapes and rules of the real API
// (k8s.io/api core/v1; KEP-3521 and KEP-3838 for gated pods):
//   GET   /api/v1/nodes                           NodeList
//   GET   /api/v1/pods                            PodList with metadata.resourceVersion
//   GET   /api/v1/pods?watch=true&resourceVersion=RV&timeoutSeconds=N
//         newline-delimited watch events after RV; a version older than
//         the retained window is answered with an ERROR event (Status 410
//         Expired), as the API server does
//   POST  /api/v1/namespaces/{ns}/pods/{name}/binding  a v1.Binding: 201, or 409 for a
//         pod already bound, 422 for a gated one ("pod has scheduling gates")
//   PATCH /api/v1/namespaces/{ns}/pods/{name}     application/json-patch+json (a failed
//         "test" is 422) or application/merge-patch+json; scheduling gates
//         may only be removed; while gated, required node affinity may only
//         gain terms' fields and expressions; an ungated pod's spec is immutable
// Playing kube-scheduler, it binds a pod whose last gate is removed to the
// node its affinity names (matchFields metadata.name In [node]).
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace tidal::k8s::testing {

class FakeKubeApi {
 public:
  using json = nlohmann::json;

  FakeKubeApi() {
    server_.Get("/api/v1/nodes", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      json list = {{"kind", "NodeList"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", std::to_string(rv_)}}}, {"items", nodes_}};
      res.set_content(list.dump(), "application/json");
    });
    server_.Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) { Pods(req, res); });
    server_.Patch(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) { PatchPod(req, res); });
    server_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)", [this](const httplib::Request& req, httplib::Response& res) { BindPod(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeKubeApi() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
    }
    cv_.notify_all();
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void AddNode(json node) {
    std::lock_guard<std::mutex> lock(mu_);
    nodes_.push_back(std::move(node));
  }
  void SetUnschedulable(const std::string& node, bool v) {
    std::lock_guard<std::mutex> lock(mu_);
    for (json& n : nodes_) {
      if (n["metadata"]["name"] == node) n["spec"]["unschedulable"] = v;
    }
  }

  // Creates a pod (uid, namespace default, phase Pending filled in).
  json CreatePod(json pod) {
    std::lock_guard<std::mutex> lock(mu_);
    json& m = pod["metadata"];
    if (!m.contains("namespace")) m["namespace"] = "default";
    m["uid"] = "uid-" + m["name"].get<std::string>() + "-" + std::to_string(++uids_);
    pod["status"]["phase"] = "Pending";
    Emit("ADDED", pod);
    pods_[Key(pod)] = pod;
    return pod;
  }
  void DeletePod(const std::string& ns, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(ns + "/" + name);
    if (it == pods_.end()) return;
    json pod = it->second;
    pods_.erase(it);
    Emit("DELETED", pod);
  }
  void SetPhase(const std::string& ns, const std::string& name, const std::string& phase) {
    std::lock_guard<std::mutex> lock(mu_);
    json& pod = pods_.at(ns + "/" + name);
    pod["status"]["phase"] = phase;
    Emit("MODIFIED", pod);
  }
  json Pod(const std::string& ns, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(ns + "/" + name);
    return it == pods_.end() ? json() : it->second;
  }
  // Watches from before now get 410 Expired.
  void ExpireWatches() {
    std::lock_guard<std::mutex> lock(mu_);
    oldest_ = rv_ + 1;
    events_.clear();
  }
  // The next n patches of a pod answer 409 Conflict.
  void FailPatches(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_patches_ = n;
  }
  int patches() {
    std::lock_guard<std::mutex> lock(mu_);
    return patches_;
  }

 private:
  static std::string Key(const json& pod) {
    return pod["metadata"]["namespace"].get<std::string>() + "/" + pod["metadata"]["name"].get<std::string>();
  }
  // Under mu_.
  void Emit(const std::string& type, json& obj) {
    obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
    events_.push_back({rv_, json{{"type", type}, {"object", obj}}});
    cv_.notify_all();
  }
  static void Fail(httplib::Response& res, int code, const std::string& reason, const std::string& message) {
    res.status = code;
    res.set_content(json{{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Failure"},
                         {"message", message}, {"reason", reason}, {"code", code}}
                        .dump(),
                    "application/json");
  }

  void Pods(const httplib::Request& req, httplib::Response& res) {
    if (req.get_param_value("watch") != "true" && req.get_param_value("watch") != "1") {
      std::lock_guard<std::mutex> lock(mu_);
      json items = json::array();
      for (const auto& [k, p] : pods_) items.push_back(p);
      res.set_content(json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", std::to_string(rv_)}}}, {"items", items}}.dump(),
                      "application/json");
      return;
    }
    const int64_t from = req.has_param("resourceVersion") && !req.get_param_value("resourceVersion").empty()
                             ? std::stoll(req.get_param_value("resourceVersion"))
                             : 0;
    const int timeout = req.has_param("timeoutSeconds") ? std::stoi(req.get_param_value("timeoutSeconds")) : 30;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
    auto next = std::make_shared<int64_t>(from);
    res.set_chunked_content_provider("application/json", [this, next, deadline](size_t, httplib::DataSink& sink) {
      std::unique_lock<std::mutex> lock(mu_);
      if (*next < oldest_ - 1) {
        json status = {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Failure"},
                       {"message", "too old resource version: " + std::to_string(*next) + " (" + std::to_string(oldest_) + ")"},
                       {"reason", "Expired"}, {"code", 410}};
        const std::string line = json{{"type", "ERROR"}, {"object", status}}.dump() + "\n";
        sink.write(line.data(), line.size());
        sink.done();
        return true;
      }
      cv_.wait_until(lock, deadline, [&] { return closing_ || (!events_.empty() && events_.back().first > *next); });
      if (closing_ || std::chrono::steady_clock::now() >= deadline) {
        sink.done();
        return true;
      }
      std::string out;
      for (const auto& [rv, e] : events_) {
        if (rv > *next) {
          out += e.dump() + "\n";
          *next = rv;
        }
      }
      lock.unlock();
      return sink.write(out.data(), out.size());
    });
  }

  void BindPod(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pods_.find(req.matches[1].str() + "/" + req.matches[2].str());
    if (it == pods_.end()) return Fail(res, 404, "NotFound", "pods \"" + req.matches[2].str() + "\" not found");
    json b = json::parse(req.body, nullptr, false);
    if (!b.is_object() || b.value("kind", "") != "Binding" || !b.contains("target") || !b["target"].contains("name")) {
      return Fail(res, 400, "BadRequest", "the body is not a v1.Binding");
    }
    json& pod = it->second;
    if (b["metadata"].contains("uid") && b["metadata"]["uid"] != pod["metadata"]["uid"]) {
      return Fail(res, 409, "Conflict", "Precondition failed: UID in precondition differs from the object's");
    }
    if (!pod["spec"].value("schedulingGates", json::array()).empty()) {
      return Fail(res, 422, "Invalid", "pod has scheduling gates");
    }
    if (pod["spec"].contains("nodeName")) {
      return Fail(res, 409, "Conflict", "Operation cannot be fulfilled on pods/binding \"" + req.matches[2].str() + "\": pod " +
                                            req.matches[2].str() + " is already assigned to node \"" + pod["spec"]["nodeName"].get<std::string>() + "\"");
    }
    pod["spec"]["nodeName"] = b["target"]["name"];
    pod["status"]["phase"] = "Running";
    Emit("MODIFIED", pod);
    res.status = 201;
    res.set_content(json{{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Success"}, {"code", 201}}.dump(),
                    "application/json");
  }

  // Whether `after`'s required node affinity only adds to `before`'s.
  static bool OnlyAdds(const json& before, const json& after) {
    auto terms = [](const json& pod) {
      const json* p = &pod;
      for (const char* k : {"spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"}) {
        if (!p->is_object() || !p->contains(k)) return json::array();
        p = &(*p)[k];
      }
      return *p;
    };
    const json a = terms(before), b = terms(after);
    if (a.empty()) return true;
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      for (const char* k : {"matchFields", "matchExpressions"}) {
        const json x = a[i].value(k, json::array()), y = b[i].value(k, json::array());
        if (y.size() < x.size()) return false;
        for (size_t j = 0; j < x.size(); ++j)
          if (x[j] != y[j]) return false;
      }
    }
    return true;
  }

  void PatchPod(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    ++patches_;
    const std::string key = req.matches[1].str() + "/" + req.matches[2].str();
    auto it = pods_.find(key);
    if (it == pods_.end()) return Fail(res, 404, "NotFound", "pods \"" + req.matches[2].str() + "\" not found");
    if (fail_patches_ > 0) {
      --fail_patches_;
      return Fail(res, 409, "Conflict", "Operation cannot be fulfilled on pods \"" + req.matches[2].str() + "\": the object has been modified");
    }
    const json before = it->second;
    json after;
    const std::string type = req.get_header_value("Content-Type");
    try {
      const json patch = json::parse(req.body);
      if (type == "application/json-patch+json") {
        after = before.patch(patch);
      } else if (type == "application/merge-patch+json") {
        after = before;
        after.merge_patch(patch);
      } else {
        return Fail(res, 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: "
                                                       "application/json-patch+json, application/merge-patch+json");
      }
    } catch (const std::exception& e) {
      return Fail(res, 422, "Invalid", std::string("the server rejected our request due to an error in our request: ") + e.what());
    }
    const json gates_before = before["spec"].value("schedulingGates", json::array());
    const json gates_after = after["spec"].value("schedulingGates", json::array());
    for (const json& g : gates_after) {
      if (std::find(gates_before.begin(), gates_before.end(), g) == gates_before.end()) {
        return Fail(res, 422, "Invalid", "Pod \"" + req.matches[2].str() + "\" is invalid: spec.schedulingGates: Forbidden: only deletion is allowed");
      }
    }
    json spec_b = before["spec"], spec_a = after["spec"];
    spec_b.erase("schedulingGates");
    spec_a.erase("schedulingGates");
    if (spec_b != spec_a && (gates_before.empty() || !OnlyAdds(before, after))) {
      return Fail(res, 422, "Invalid", "Pod \"" + req.matches[2].str() + "\" is invalid: spec: Forbidden: pod updates may not change fields other than ...");
    }
    if (after["metadata"]["uid"] != before["metadata"]["uid"]) return Fail(res, 422, "Invalid", "metadata.uid: field is immutable");
    it->second = after;
    Emit("MODIFIED", it->second);
    // kube-scheduler: an ungated pod goes to the node its affinity names.
    json& pod = it->second;
    if (gates_after.empty() && !gates_before.empty() && !pod["spec"].contains("nodeName")) {
      const json* p = &pod;
      for (const char* k : {"spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"}) {
        p = p->is_object() && p->contains(k) ? &(*p)[k] : nullptr;
        if (p == nullptr) break;
      }
      if (p != nullptr && !p->empty()) {
        for (const json& f : (*p)[0].value("matchFields", json::array())) {
          if (f["key"] == "metadata.name" && f["operator"] == "In" && f["values"].size() == 1) {
            pod["spec"]["nodeName"] = f["values"][0];
            pod["status"]["phase"] = "Running";
            Emit("MODIFIED", pod);
          }
        }
      }
    }
    res.set_content(pod.dump(), "application/json");
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool closing_ = false;
  int64_t rv_ = 100, oldest_ = 0;
  int uids_ = 0, fail_patches_ = 0, patches_ = 0;
  std::map<std::string, json> pods_;
  std::vector<json> nodes_;
  std::vector<std::pair<int64_t, json>> events_;
};

}  // namespace tidal::k8s::testing
