// The daemon's HTTP face (docs/server-api.md): routes, authentication,
// the error shape, the audit of refused state-changing calls, the
// dashboard's static files. cpp-httplib serves; each request is handled
// on one of its pool threads, reading from the daemon's snapshot.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "server/daemon.h"

namespace tidal::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (Port() says which)
  std::string dashboard_dir;  // the built dashboard (web/dist); "" = none
  int threads = 128;  // one per keep-alive connection: httplib holds a pool thread for each
};

class HttpServer {
 public:
  HttpServer(Daemon& daemon, TokenStore& tokens, HttpOptions options);
  ~HttpServer();
  // Binds; Ok once it listens.
  Status Listen();
  // Serves until Stop (blocks).
  void Serve();
  void Stop();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The OpenAPI 3 document of /v1 (openapi.cc).
const std::string& OpenApiDocument();

}  // namespace tidal::server
