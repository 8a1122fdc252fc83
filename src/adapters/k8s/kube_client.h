// The few Kubernetes API calls tidal makes — list, watch, patch, create —
// over HTTP or HTTPS with a bearer token: in a pod, from the service
// account (InClusterConfig); outside, through `kubectl proxy` on loopback
// (plain HTTP, the proxy holds the credentials).
//
// Errors carry the API's own Status message and code ("pods \"x\" not
// found", 404), the verb and the path.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "adapters/k8s/go_json.h"
#include "common/result.h"

namespace httplib {
class Client;
}

namespace tidal::k8s {

struct KubeApiConfig {
  std::string server = "http://127.0.0.1:8001";  // kubectl proxy's default
  std::string token;                              // sent as "Authorization: Bearer ..." when set
  std::string ca_file;                            // https: the CA that signed the API server's certificate
  bool insecure_skip_tls_verify = false;          // https without checking the certificate (tests, never production)
  int timeout_s = 30;
};

// The configuration of a pod's service account: KUBERNETES_SERVICE_HOST and
// _PORT, the token and CA under /var/run/secrets/kubernetes.io/serviceaccount
// (`dir` overrides that folder).
Result<KubeApiConfig> InClusterConfig(const std::string& dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// A watch event: type ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.
struct WatchEvent {
  std::string type;
  ojson object;
};

class KubeClient {
 public:
  static Result<std::unique_ptr<KubeClient>> Connect(const KubeApiConfig& config);
  ~KubeClient();

  Result<ojson> Get(const std::string& path);
  // content_type: application/json-patch+json, application/merge-patch+json
  // or application/strategic-merge-patch+json.
  Result<ojson> Patch(const std::string& path, const ojson& patch, std::string_view content_type);
  Result<ojson> Post(const std::string& path, const ojson& body);
  // Streams the events of a watch (path with ?watch=true...) to `on_event`
  // until it returns false, the server ends the stream, or the timeout
  // passes (a watch is re-opened by the caller from its last resourceVersion).
  Status Watch(const std::string& path, const std::function<bool(const WatchEvent&)>& on_event, int timeout_s);

 private:
  explicit KubeClient(KubeApiConfig config);
  Result<ojson> Answer(std::string_view verb, const std::string& path, int status, const std::string& body);
  KubeApiConfig config_;
  std::unique_ptr<httplib::Client> http_;
};

// The message of an API Status object, or the body itself.
std::string StatusMessage(const std::string& body);

// Splits a watch stream into events: feed it bytes as they come; each
// complete line is one JSON event. Malformed lines are errors naming the
// line.
class WatchDecoder {
 public:
  Status Feed(std::string_view bytes, const std::function<bool(const WatchEvent&)>& on_event, bool* stop);

 private:
  std::string pending_;
  int64_t line_ = 0;
};

}  // namespace tidal::k8s
