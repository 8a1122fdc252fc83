// Crash test: the seeded ledger workload run by a worker process that is
// killed with SIGKILL at random moments, hundreds of times, and restarted; on
// SQLite and on PostgreSQL. After the last run: no entry lost or duplicated
// (every account, hold and answer equals an uninterrupted run's), every
// balance equals the sum of its entries and the balances outside the treasury
// equal the grants (Check), and every retried request answered as it first did
// (the worker exits 3 otherwise).
//
// Size: TIDAL_CRASH_KILLS (default 120) and TIDAL_CRASH_OPS (default 2500).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/rng.h"
#include "market/ledger.h"
#include "market/ledger_workload.h"
#include "store/store_testing.h"

extern char** environ;

namespace tidal::market {
namespace {

namespace fs = std::filesystem;

std::int64_t EnvInt(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoll(v, nullptr, 10) : fallback;
}

std::vector<std::string> ReadAnswers(const fs::path& log) {
  std::ifstream in(log);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line.substr(line.find('\t') + 1));
  return out;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct CrashFigures {
  int runs = 0;
  int kills = 0;
  std::int64_t ops = 0;
  int discrepancies = 0;
};

class LedgerCrashTest : public ::testing::TestWithParam<store::testing::Backend> {};

TEST_P(LedgerCrashTest, KilledAtRandomLosesNothing) {
  const std::int64_t kills = EnvInt("TIDAL_CRASH_KILLS", 120);
  std::int64_t ops = EnvInt("TIDAL_CRASH_OPS", 2500);
  constexpr std::uint64_t kSeed = 20261201;
  auto db = store::testing::FreshStore(GetParam());
  if (!db) GTEST_SKIP() << db.error().message;
  const fs::path dir = fs::temp_directory_path() / fmt::format("tidal-crash-{}-{}", ::getpid(),
                                                                 store::testing::BackendName(GetParam()));
  fs::create_directories(dir);
  const fs::path log = dir / "answers.log";
  const fs::path err = dir / "worker.err";
  Rng rng(kSeed);
  CrashFigures fig;
  const std::string seed = std::to_string(kSeed);
  while (true) {
    const std::string n_ops = std::to_string(ops);
    const std::string retry = std::to_string(rng.Uniform(30));
    std::vector<std::string> args = {TIDAL_LEDGER_CRASH_WORKER, (*db)->url(), seed, n_ops, log.string(), retry};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ), 0) << "cannot start " << argv[0];
    posix_spawn_file_actions_destroy(&fa);
    ++fig.runs;
    if (fig.kills < kills) {
      // Anywhere from the store's opening to deep inside a batch.
      std::this_thread::sleep_for(std::chrono::microseconds(rng.Uniform(60'000)));
      ::kill(pid, SIGKILL);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status)) {
      ++fig.kills;
      continue;
    }
    ASSERT_TRUE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 3) ++fig.discrepancies;
    ASSERT_EQ(WEXITSTATUS(status), 0) << ReadFile(err);
    if (fig.kills >= kills) break;  // it ran every operation
    ops += ops / 4;  // done before the kills were: give it more to do
  }
  const std::vector<std::string> answers = ReadAnswers(log);
  fig.ops = static_cast<std::int64_t>(answers.size());
  ASSERT_EQ(fig.ops, ops);

  // The same workload, uninterrupted, on a second store.
  auto ref_db = store::testing::FreshStore(GetParam());
  ASSERT_TRUE(ref_db) << ref_db.error().ToString();
  auto ref = Ledger::Open((*ref_db)->store());
  ASSERT_TRUE(ref);
  const LedgerWorkload workload(kSeed, 8);
  for (const auto& a : workload.Accounts()) ASSERT_TRUE(ref->CreateAccount(a));
  int differing = 0;
  for (std::int64_t i = 0; i < ops; ++i) {
    const LedgerOp op = workload.Op(i);
    std::string answer = "expire";
    if (op.kind == LedgerOp::Kind::kExpire) {
      ASSERT_TRUE(ref->ExpireHolds(op.now_us));
    } else {
      auto out = ref->CreateTransfers(op.transfers);
      ASSERT_TRUE(out) << out.error().ToString();
      answer = Answer(*out);
    }
    if (!SameAnswer(answer, answers[i])) {
      if (++differing <= 5) ADD_FAILURE() << "operation " << i << ": uninterrupted '" << answer << "', crashed run '" << answers[i] << "'";
    }
  }
  fig.discrepancies += differing;

  auto crashed = Ledger::Open((*db)->store());
  ASSERT_TRUE(crashed);
  auto got = crashed->Accounts();
  auto want = ref->Accounts();
  ASSERT_TRUE(got && want);
  ASSERT_EQ(got->size(), want->size());
  for (std::size_t k = 0; k < got->size(); ++k) {
    Account g = (*got)[k];
    Account w = (*want)[k];
    g.created_seq = w.created_seq = 0;  // accounts were created at different points
    EXPECT_EQ(g, w) << g.name;
    if (!(g == w)) ++fig.discrepancies;
  }
  auto holds = crashed->OpenHolds();
  auto ref_holds = ref->OpenHolds();
  ASSERT_TRUE(holds && ref_holds);
  EXPECT_EQ(*holds, *ref_holds);
  auto check = crashed->Check();
  auto ref_check = ref->Check();
  ASSERT_TRUE(check && ref_check);
  EXPECT_TRUE(check->ok()) << ::testing::PrintToString(check->violations);
  EXPECT_EQ(check->transfers, ref_check->transfers);  // none lost, none twice
  EXPECT_EQ(check->rejected, ref_check->rejected);
  EXPECT_EQ(check->grants, ref_check->grants);
  EXPECT_GT(check->transfers, ops / 2);
  EXPECT_EQ(fig.discrepancies, 0);
  std::printf("crash test (%s): %d runs, %d kills, %lld operations (%lld transfers accepted, %lld rejected), "
              "%d discrepancies\n",
              store::testing::BackendName(GetParam()).c_str(), fig.runs, fig.kills,
              static_cast<long long>(fig.ops), static_cast<long long>(check->transfers),
              static_cast<long long>(check->rejected), fig.discrepancies);
  RecordProperty("runs", fig.runs);
  RecordProperty("kills", fig.kills);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Backends, LedgerCrashTest, ::testing::ValuesIn(store::testing::AllBackends()),
                         [](const auto& info) { return store::testing::BackendName(info.param); });

}  // namespace
}  // namespace tidal::market
