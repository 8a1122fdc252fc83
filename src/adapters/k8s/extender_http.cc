#include "adapters/k8s/extender_http.h"

#include <httplib.h>

namespace tidal::k8s {
namespace {

ExtenderReply BadRequest(const Error& e) { return {.status = 400, .body = e.message + "\n", .content_type = "text/plain"}; }

}  // namespace

ExtenderReply HandleExtender(Extender& extender, std::string_view verb, std::string_view body, int64_t now_s) {
  if (verb == "filter") {
    auto args = ParseExtenderArgs(body, "filter request (ExtenderArgs)");
    if (!args) return BadRequest(args.error());
    return {.body = Encode(extender.Filter(*args, now_s))};
  }
  if (verb == "prioritize") {
    auto args = ParseExtenderArgs(body, "prioritize request (ExtenderArgs)");
    if (!args) return BadRequest(args.error());
    auto r = extender.Prioritize(*args, now_s);
    if (!r) return BadRequest(r.error());
    return {.body = Encode(*r)};
  }
  if (verb == "bind") {
    auto args = ParseExtenderBindingArgs(body);
    if (!args) return BadRequest(args.error());
    return {.body = Encode(extender.Bind(*args, now_s))};
  }
  if (verb == "preempt") {
    auto args = ParseExtenderPreemptionArgs(body);
    if (!args) return BadRequest(args.error());
    auto r = extender.Preempt(*args, now_s);
    if (!r) return BadRequest(r.error());
    return {.body = Encode(*r)};
  }
  return {.status = 404, .body = "unknown extender verb; tidal serves filter, prioritize, bind and preempt\n", .content_type = "text/plain"};
}

void MountExtender(httplib::Server& server, const std::string& prefix, Extender& extender, std::mutex& mu,
                   std::function<int64_t()> clock) {
  for (const char* verb : {"filter", "prioritize", "bind", "preempt"}) {
    server.Post(prefix + "/" + verb, [&extender, &mu, clock, verb](const httplib::Request& req, httplib::Response& res) {
      ExtenderReply r;
      {
        std::lock_guard<std::mutex> lock(mu);
        r = HandleExtender(extender, verb, req.body, clock());
      }
      res.status = r.status;
      res.set_content(r.body, r.content_type);
    });
  }
}

}  // namespace tidal::k8s
