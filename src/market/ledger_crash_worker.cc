// The crash test's worker: runs the seeded ledger workload against a store,
// appending each operation's answer to a log, and is killed (SIGKILL) at random
// moments by ledger_crash_test. On each start it re-asks the last `retry`
// operations it had answered and exits 3 if any answer differs from the first
// one ("ok" must become "exists"; a rejection must stay the same rejection).
//
//   ledger_crash_worker STORE_URL SEED OPS LOG RETRY
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "market/ledger.h"
#include "market/ledger_workload.h"
#include "store/store.h"

namespace {

using namespace tidal;
using namespace tidal::market;

constexpr int kTenants = 8;

// Reads the complete lines of the log and cuts off a line the last kill left
// half-written.
std::vector<std::string> ReadLog(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> answers;
  std::size_t pos = 0;
  std::size_t complete = 0;
  while (true) {
    const std::size_t nl = all.find('\n', pos);
    if (nl == std::string::npos) break;
    const std::string line = all.substr(pos, nl - pos);
    const std::size_t tab = line.find('\t');
    if (tab == std::string::npos || std::stoll(line.substr(0, tab)) != static_cast<long long>(answers.size())) {
      std::fprintf(stderr, "log %s: line %zu is malformed\n", path.c_str(), answers.size() + 1);
      std::exit(2);
    }
    answers.push_back(line.substr(tab + 1));
    pos = nl + 1;
    complete = pos;
  }
  if (complete != all.size() && ::truncate(path.c_str(), static_cast<off_t>(complete)) != 0) {
    std::perror("truncate");
    std::exit(2);
  }
  return answers;
}

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s STORE_URL SEED OPS LOG RETRY\n", argv[0]);
    return 2;
  }
  const std::string url = argv[1];
  const std::uint64_t seed = std::strtoull(argv[2], nullptr, 10);
  const std::int64_t ops = std::strtoll(argv[3], nullptr, 10);
  const std::string log_path = argv[4];
  const std::int64_t retry = std::strtoll(argv[5], nullptr, 10);

  const std::vector<std::string> logged = ReadLog(log_path);
  auto store = store::OpenStore(url);
  if (!store) Fail(store.error().ToString());
  auto ledger = Ledger::Open(**store);
  if (!ledger) Fail(ledger.error().ToString());
  const LedgerWorkload workload(seed, kTenants);
  for (const AccountSpec& a : workload.Accounts())
    if (auto s = ledger->CreateAccount(a); !s) Fail(s.error().ToString());

  const int fd = ::open(log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) Fail("cannot open the log " + log_path);
  const std::int64_t start = std::max<std::int64_t>(0, static_cast<std::int64_t>(logged.size()) - retry);
  for (std::int64_t i = start; i < ops; ++i) {
    const LedgerOp op = workload.Op(i);
    std::string answer;
    if (op.kind == LedgerOp::Kind::kExpire) {
      auto n = ledger->ExpireHolds(op.now_us);
      if (!n) Fail(n.error().ToString());
      answer = "expire";  // a sweep is not a request with an answer to repeat
    } else {
      auto out = ledger->CreateTransfers(op.transfers);
      if (!out) Fail(out.error().ToString());
      answer = Answer(*out);
    }
    if (i < static_cast<std::int64_t>(logged.size())) {
      if (!SameAnswer(logged[i], answer)) {
        std::fprintf(stderr, "discrepancy at operation %lld: first answered '%s', the retry '%s'\n",
                     static_cast<long long>(i), logged[i].c_str(), answer.c_str());
        return 3;
      }
      continue;
    }
    const std::string line = fmt::format("{}\t{}\n", i, answer);
    if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) Fail("cannot write the log");
  }
  ::close(fd);
  return 0;
}
