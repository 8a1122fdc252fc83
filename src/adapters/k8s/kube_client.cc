#include "adapters/k8s/kube_client.h"

#include <httplib.h>

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

namespace tidal::k8s {

std::string StatusMessage(const std::string& body) {
  ojson v = ojson::parse(body, nullptr, false);
  if (v.is_object() && v.contains("message") && v["message"].is_string()) return v["message"].get<std::string>();
  std::string s = body.substr(0, 300);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s.empty() ? "(no message)" : s;
}

Status WatchDecoder::Feed(std::string_view bytes, const std::function<bool(const WatchEvent&)>& on_event, bool* stop) {
  pending_.append(bytes);
  size_t start = 0;
  for (size_t nl = pending_.find('\n'); nl != std::string::npos; nl = pending_.find('\n', start)) {
    std::string_view line(pending_.data() + start, nl - start);
    start = nl + 1;
    ++line_;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    ojson v = ojson::parse(line, nullptr, false);
    if (!v.is_object() || !v.contains("type") || !v["type"].is_string() || !v.contains("object") || !v["object"].is_object()) {
      pending_.erase(0, start);
      return MakeError(ErrorCode::kParse, "watch stream line {}: expected {{\"type\": ..., \"object\": {{...}}}}, got '{}'", line_,
                       std::string(line.substr(0, 200)));
    }
    if (!on_event({v["type"].get<std::string>(), std::move(v["object"])})) {
      *stop = true;
      break;
    }
  }
  pending_.erase(0, start);
  return Ok();
}

KubeClient::KubeClient(KubeApiConfig config) : config_(std::move(config)) {}
KubeClient::~KubeClient() = default;

namespace {

void Configure(httplib::Client& c, const KubeApiConfig& config, int read_timeout_s) {
  c.set_connection_timeout(config.timeout_s, 0);
  c.set_read_timeout(read_timeout_s, 0);
  c.set_write_timeout(config.timeout_s, 0);
  if (!config.token.empty()) c.set_bearer_token_auth(config.token.c_str());
  if (config.server.rfind("https://", 0) == 0) {
    c.enable_server_certificate_verification(!config.insecure_skip_tls_verify);
    if (!config.ca_file.empty()) c.set_ca_cert_path(config.ca_file.c_str());
  }
}

Result<std::string> ReadSmallFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return MakeError(ErrorCode::kNotFound, "cannot read {}", path);
  std::string out(64 * 1024, '\0');
  out.resize(std::fread(out.data(), 1, out.size(), f));
  std::fclose(f);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

Result<KubeApiConfig> InClusterConfig(const std::string& dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "not in a pod: KUBERNETES_SERVICE_HOST/PORT are not set; outside a cluster, run `kubectl proxy` and give its URL");
  }
  KubeApiConfig c;
  const std::string h = host;
  c.server = fmt::format("https://{}:{}", h.find(':') != std::string::npos ? "[" + h + "]" : h, port);
  TIDAL_ASSIGN_OR_RETURN(c.token, ReadSmallFile(dir + "/token"));
  c.ca_file = dir + "/ca.crt";
  if (auto ca = ReadSmallFile(c.ca_file); !ca) return std::unexpected(ca.error());
  return c;
}

Result<std::unique_ptr<KubeClient>> KubeClient::Connect(const KubeApiConfig& config) {
  if (config.server.rfind("http://", 0) != 0 && config.server.rfind("https://", 0) != 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "API server '{}': give an http:// or https:// URL (a local `kubectl proxy` is http://127.0.0.1:8001)", config.server);
  }
  std::unique_ptr<KubeClient> c(new KubeClient(config));
  c->http_ = std::make_unique<httplib::Client>(config.server);
  Configure(*c->http_, config, config.timeout_s);
  return c;
}

Result<ojson> KubeClient::Answer(std::string_view verb, const std::string& path, int status, const std::string& body) {
  if (status < 200 || status >= 300) {
    return MakeError(status == 404 ? ErrorCode::kNotFound : status == 409 || status == 422 ? ErrorCode::kFailedPrecondition : ErrorCode::kIo,
                     "{} {}: {} (HTTP {})", verb, path, StatusMessage(body), status);
  }
  ojson v = ojson::parse(body, nullptr, false);
  if (v.is_discarded()) return MakeError(ErrorCode::kParse, "{} {}: the answer is not JSON: '{}'", verb, path, body.substr(0, 200));
  return v;
}

Result<ojson> KubeClient::Get(const std::string& path) {
  auto r = http_->Get(path.c_str());
  if (!r) return MakeError(ErrorCode::kIo, "GET {}{}: {}", config_.server, path, httplib::to_string(r.error()));
  return Answer("GET", path, r->status, r->body);
}

Result<ojson> KubeClient::Patch(const std::string& path, const ojson& patch, std::string_view content_type) {
  auto r = http_->Patch(path.c_str(), patch.dump(), std::string(content_type).c_str());
  if (!r) return MakeError(ErrorCode::kIo, "PATCH {}{}: {}", config_.server, path, httplib::to_string(r.error()));
  return Answer("PATCH", path, r->status, r->body);
}

Result<ojson> KubeClient::Post(const std::string& path, const ojson& body) {
  auto r = http_->Post(path.c_str(), body.dump(), "application/json");
  if (!r) return MakeError(ErrorCode::kIo, "POST {}{}: {}", config_.server, path, httplib::to_string(r.error()));
  return Answer("POST", path, r->status, r->body);
}

Status KubeClient::Watch(const std::string& path, const std::function<bool(const WatchEvent&)>& on_event, int timeout_s) {
  httplib::Client watch(config_.server);
  Configure(watch, config_, timeout_s);
  WatchDecoder decoder;
  Status failed = Ok();
  bool stop = false;
  int status = 0;
  std::string error_body;
  auto r = watch.Get(
      path.c_str(), httplib::Headers{},
      [&](const httplib::Response& res) {
        status = res.status;
        return true;
      },
      [&](const char* data, size_t n) {
        if (status != 200) {
          error_body.append(data, n);
          return true;
        }
        failed = decoder.Feed(std::string_view(data, n), on_event, &stop);
        return failed.has_value() && !stop;
      });
  if (!failed) return failed;
  if (stop) return Ok();
  if (status != 0 && status != 200) return MakeError(ErrorCode::kIo, "watch {}: {} (HTTP {})", path, StatusMessage(error_body), status);
  if (!r && r.error() != httplib::Error::Read && r.error() != httplib::Error::Canceled) {
    return MakeError(ErrorCode::kIo, "watch {}{}: {}", config_.server, path, httplib::to_string(r.error()));
  }
  return Ok();  // the server ended the stream, or the read timed out: re-open
}

}  // namespace tidal::k8s
