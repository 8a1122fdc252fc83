// `tidal serve`: the control plane (docs/server.md) — the scheduler on a
// wall clock, the REST API, metrics and the dashboard, over the embedded
// simulated cluster by default. `tidal token`: API tokens from the command
// line, against the same store.
//
//   tidal serve [--config FILE] [--store URL] [--listen HOST:PORT] [--admin-token-file FILE] [--dashboard DIR]
//   tidal token create --role ROLE [--tenant T] [--name N] [--store URL]
//   tidal token list [--store URL] | revoke ID [--store URL]
//
// Exit codes: 0 stopped by SIGINT/SIGTERM, 2 bad input or an unusable store
// or port.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "common/data_path.h"
#include "server/auth.h"
#include "server/daemon.h"
#include "server/daemon_config.h"
#include "server/http_server.h"
#include "store/store.h"

namespace tidal::cli {
namespace {

struct ServeArgs {
  std::string config, store, listen = "127.0.0.1:8080", admin_token_file, dashboard;
};

struct TokenArgs {
  std::string store, role, tenant, name, id;
};

int Fail(std::string_view cmd, const std::string& msg) {
  fmt::print(stderr, "tidal {}: {}\n", cmd, msg);
  return 2;
}

// web/dist under the working directory, else next to the binary's source tree.
std::string DefaultDashboard() { return FindShippedPath("web/dist", "index.html"); }

std::string DefaultAdminTokenFile(const std::string& store_url) {
  if (store_url.starts_with("sqlite:") && store_url != "sqlite::memory:") {
    std::string path = store_url.substr(7);
    if (path.starts_with("//")) path = path.substr(2);
    return (std::filesystem::path(path).parent_path() / "admin-token").string();
  }
  return "admin-token";
}

Status WriteSecret(const std::string& path, const std::string& token) {
  std::error_code ec;
  if (auto dir = std::filesystem::path(path).parent_path(); !dir.empty()) std::filesystem::create_directories(dir, ec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return MakeError(ErrorCode::kIo, "cannot write the admin token to {}: {}", path, std::strerror(errno));
  ::fchmod(fd, 0600);
  const std::string line = token + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return MakeError(ErrorCode::kIo, "cannot write the admin token to {}", path);
  return Ok();
}

int Serve(const ServeArgs& a) {
  const std::string url = a.store.empty() ? store::DefaultStoreUrl() : a.store;
  const std::string config_path = a.config.empty() ? server::DefaultDaemonConfigPath() : a.config;
  server::HttpOptions http;
  {
    const auto colon = a.listen.rfind(':');
    if (colon == std::string::npos) return Fail("serve", fmt::format("--listen '{}' must read HOST:PORT", a.listen));
    http.host = a.listen.substr(0, colon);
    try {
      http.port = std::stoi(a.listen.substr(colon + 1));
    } catch (...) {
      http.port = -1;
    }
    if (http.port < 0 || http.port > 65535) return Fail("serve", fmt::format("--listen '{}': the port must be 0..65535", a.listen));
  }
  http.dashboard_dir = a.dashboard.empty() ? DefaultDashboard() : a.dashboard;

  // Signals are taken by a thread of their own (sigwait), before any other
  // thread starts, so every thread inherits the mask.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  auto config = server::ReadDaemonConfig(config_path);
  if (!config) return Fail("serve", config.error().message);
  auto st = store::OpenStore(url);
  if (!st) return Fail("serve", st.error().message);
  fmt::print(stderr, "tidal serve: {} ({} nodes, {} trace jobs at {}x), store {}\n", config->name, config->nodes.size(),
             config->trace.size(), config->speed, (*st)->display_url());
  const auto t0 = std::chrono::steady_clock::now();
  auto daemon = server::Daemon::Open(std::move(*config), **st, server::SystemWallClock());
  if (!daemon) return Fail("serve", daemon.error().message);
  fmt::print(stderr, "tidal serve: state replayed to now in {:.1f} s ({} job states corrected)\n",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), (*daemon)->reconciled());

  server::TokenStore tokens(**st);
  const std::string token_file = a.admin_token_file.empty() ? DefaultAdminTokenFile(url) : a.admin_token_file;
  std::string admin_token;
  auto count = tokens.Count();
  if (!count) return Fail("serve", count.error().message);
  if (*count == 0) {
    auto t = tokens.Create(server::Role::kAdmin, "", "first admin", "serve", static_cast<int64_t>(std::time(nullptr)));
    if (!t) return Fail("serve", t.error().message);
    if (Status s = WriteSecret(token_file, t->token); !s) return Fail("serve", s.error().message);
    admin_token = t->token;
    fmt::print(stderr, "tidal serve: a new store: the admin token is in {} (mode 0600)\n", token_file);
  } else if (std::ifstream in(token_file); in) {
    std::getline(in, admin_token);
  }

  server::HttpServer server(**daemon, tokens, http);
  if (Status s = server.Listen(); !s) return Fail("serve", s.error().message);
  (*daemon)->Start();
  const std::string base = fmt::format("http://{}:{}", http.host == "0.0.0.0" ? "127.0.0.1" : http.host, server.port());
  fmt::print("tidal serve: listening on {}\n", base);
  if (!admin_token.empty()) fmt::print("tidal serve: dashboard {}/#token={}\n", base, admin_token);
  else fmt::print("tidal serve: dashboard {}/ (paste a token; `tidal token create --role viewer` makes one)\n", base);
  std::fflush(stdout);

  std::thread signals([&] {
    int sig = 0;
    sigwait(&sigs, &sig);
    fmt::print(stderr, "tidal serve: {} received, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    server.Stop();
  });
  server.Serve();
  (*daemon)->Stop();
  if (signals.joinable()) {
    pthread_kill(signals.native_handle(), SIGTERM);  // wakes it if the server stopped on its own
    signals.join();
  }
  return 0;
}

int WithTokens(const TokenArgs& a, const std::function<int(server::TokenStore&)>& fn) {
  const std::string url = a.store.empty() ? store::DefaultStoreUrl() : a.store;
  auto st = store::OpenStore(url);
  if (!st) return Fail("token", st.error().message);
  server::TokenStore tokens(**st);
  return fn(tokens);
}

}  // namespace

void RegisterServeCommands(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* s = app.add_subcommand("serve", "run the control plane: scheduler, REST API, metrics and dashboard (docs/server.md)");
  s->add_option("--config", a->config, "daemon config (YAML); default: data/serve/default.yaml (the embedded simulated cluster)");
  s->add_option("--store", a->store, "sqlite:PATH or postgresql://...; default: sqlite in the user's data directory");
  s->add_option("--listen", a->listen, "HOST:PORT to serve on (port 0: any free one)")->capture_default_str();
  s->add_option("--admin-token-file", a->admin_token_file,
                "where the first start writes the admin token (mode 0600); default: admin-token next to the store");
  s->add_option("--dashboard", a->dashboard, "the built dashboard folder; default: web/dist");
  s->callback([a] { SetExitCode(Serve(*a)); });

  auto t = std::make_shared<TokenArgs>();
  CLI::App* tok = app.add_subcommand("token", "API tokens (docs/server-api.md): create, list, revoke");
  tok->require_subcommand(1);
  tok->fallthrough();
  tok->add_option("--store", t->store, "sqlite:PATH or postgresql://...; default: sqlite in the user's data directory");
  CLI::App* create = tok->add_subcommand("create", "create a token and print it (it is shown once)");
  create->add_option("--role", t->role, "admin, operator, tenant-admin, member or viewer")->required();
  create->add_option("--tenant", t->tenant, "the tenant a tenant-admin or member (or viewer) token belongs to");
  create->add_option("--name", t->name, "a name to recognise it by");
  create->callback([t] {
    SetExitCode(WithTokens(*t, [&](server::TokenStore& ts) {
      auto role = server::ParseRole(t->role);
      if (!role) return Fail("token", role.error().message);
      auto issued = ts.Create(*role, t->tenant, t->name, "cli", static_cast<int64_t>(std::time(nullptr)));
      if (!issued) return Fail("token", issued.error().message);
      fmt::print("{}\n", issued->token);
      return 0;
    }));
  });
  CLI::App* list = tok->add_subcommand("list", "list tokens (ids, roles, tenants; never secrets)");
  list->callback([t] {
    SetExitCode(WithTokens(*t, [&](server::TokenStore& ts) {
      auto all = ts.List();
      if (!all) return Fail("token", all.error().message);
      fmt::print("{:<10} {:<13} {:<16} {:<8} {}\n", "id", "role", "tenant", "state", "name");
      for (const server::TokenInfo& i : *all)
        fmt::print("{:<10} {:<13} {:<16} {:<8} {}\n", i.principal.token_id, server::RoleName(i.principal.role), i.principal.tenant,
                   i.revoked_at ? "revoked" : "live", i.principal.name);
      return 0;
    }));
  });
  CLI::App* revoke = tok->add_subcommand("revoke", "revoke a token by id");
  revoke->add_option("id", t->id, "the token's id (the 8 characters after tidal_)")->required();
  revoke->callback([t] {
    SetExitCode(WithTokens(*t, [&](server::TokenStore& ts) {
      if (Status s = ts.Revoke(t->id, static_cast<int64_t>(std::time(nullptr))); !s) return Fail("token", s.error().message);
      fmt::print("revoked {}\n", t->id);
      return 0;
    }));
  });
}

}  // namespace tidal::cli
