// The extender's HTTP face: kube-scheduler POSTs JSON to <urlPrefix>/<verb>
// (pkg/scheduler/extender.go: Content-Type application/json, any status but
// 200 is a failed call). Mounted on an httplib server under `prefix`, with
// the verbs filter, prioritize, bind and preempt — the names the sample
// KubeSchedulerConfiguration (data/k8s/scheduler-config.yaml) gives.
// A body that does not parse is a 400 naming the field; answers are the
// exact bytes Go would write.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "adapters/k8s/extender.h"

namespace httplib {
class Server;
}

namespace tidal::k8s {

// Calls are serialised on `mu`; `clock` gives the time in seconds.
void MountExtender(httplib::Server& server, const std::string& prefix, Extender& extender, std::mutex& mu,
                   std::function<int64_t()> clock);

// The same dispatch without a socket: verb and body in, status and body out.
struct ExtenderReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};
ExtenderReply HandleExtender(Extender& extender, std::string_view verb, std::string_view body, int64_t now_s);

}  // namespace tidal::k8s
