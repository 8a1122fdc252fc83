// Ledger throughput with durable commits: transfers per second through
// Ledger::CreateTransfers on SQLite (WAL, synchronous=FULL) and PostgreSQL
// (synchronous_commit=on, SERIALIZABLE), at batch sizes 1, 10, 100 and 1000.
// Every batch is one store transaction, committed durably before the next.
// The figures are also given as ratios to batch size 1 on the same backend in
// the same run. Targets (the issue): >= 20k transfers/s on SQLite in batched
// mode, >= 5k/s on PostgreSQL on loopback.
//
//   build/bench/ledger_bench [--transfers N] [--json]
// PostgreSQL: TIDAL_TEST_POSTGRES_URL names the server (scripts/pg-test-server.sh
// start DIR prints one); without it that backend is skipped.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "market/ledger.h"
#include "market/ledger_workload.h"
#include "store/store_testing.h"

namespace {

using namespace tidal;
using namespace tidal::market;

struct Figure {
  std::string backend;
  int batch = 0;
  std::int64_t transfers = 0;
  double seconds = 0;
  double per_s() const { return static_cast<double>(transfers) / seconds; }
};

Result<Figure> Measure(store::testing::Backend backend, int batch, std::int64_t n) {
  TIDAL_ASSIGN_OR_RETURN(auto db, store::testing::FreshStore(backend));
  TIDAL_ASSIGN_OR_RETURN(Ledger ledger, Ledger::Open(db->store()));
  const LedgerWorkload w(7, 16);
  for (const auto& a : w.Accounts()) TIDAL_RETURN_IF_ERROR(ledger.CreateAccount(a));
  // Enough credits that no charge is refused.
  std::vector<Transfer> grants;
  for (int k = 0; k < 16; ++k)
    grants.push_back(Transfer{.id = fmt::format("grant-{}", k), .debit = std::string(kTreasury),
                              .credit = fmt::format("t{}", k), .amount = INT64_MAX / 32,
                              .code = std::string(kCodeGrant)});
  TIDAL_ASSIGN_OR_RETURN(auto g, ledger.CreateTransfers(grants));
  std::vector<Transfer> buf;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < n;) {
    buf.clear();
    for (int k = 0; k < batch && i < n; ++k, ++i) buf.push_back(w.Charge(i));
    TIDAL_ASSIGN_OR_RETURN(auto out, ledger.CreateTransfers(buf));
    for (const auto& o : out)
      if (!o.ok()) return MakeError(ErrorCode::kInternal, "a charge was refused: {}", o.name());
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  TIDAL_ASSIGN_OR_RETURN(CheckReport c, ledger.Check());
  if (!c.ok()) return MakeError(ErrorCode::kInternal, "check failed: {}", c.violations.front());
  return Figure{store::testing::BackendName(backend), batch, n, s};
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t n = 20000;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--transfers") && i + 1 < argc) n = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--json")) json = true;
    else {
      std::fprintf(stderr, "usage: %s [--transfers N] [--json]\n", argv[0]);
      return 2;
    }
  }
  nlohmann::json out = nlohmann::json::array();
  for (auto backend : store::testing::AllBackends()) {
    double base = 0;
    for (int batch : {1, 10, 100, 1000}) {
      // Batch size 1 commits once per transfer: fewer transfers keep it short.
      const std::int64_t count = batch == 1 ? std::max<std::int64_t>(200, n / 20) : n;
      auto f = Measure(backend, batch, count);
      if (!f) {
        std::fprintf(stderr, "%s: %s\n", store::testing::BackendName(backend).c_str(), f.error().message.c_str());
        break;
      }
      if (batch == 1) base = f->per_s();
      out.push_back({{"backend", f->backend}, {"batch", batch}, {"transfers", f->transfers},
                     {"seconds", f->seconds}, {"transfers_per_s", f->per_s()}, {"vs_batch_1", f->per_s() / base}});
      if (!json)
        std::printf("%-10s batch %5d: %8lld transfers in %7.3f s = %9.0f transfers/s (%.1fx batch 1)\n",
                    f->backend.c_str(), batch, static_cast<long long>(f->transfers), f->seconds, f->per_s(),
                    f->per_s() / base);
    }
  }
  if (json) std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
