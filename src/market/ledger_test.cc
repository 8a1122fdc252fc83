// The ledger's rules, as tables worked out by hand, on every store backend
// (SQLite always; PostgreSQL when TIDAL_TEST_POSTGRES_URL names a server).
#include "market/ledger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <tuple>
#include <string>
#include <vector>

#include "market/ledger_rows.h"
#include "store/store_testing.h"

namespace tidal::market {
namespace {

using ::testing::HasSubstr;
namespace tf = transfer_flags;

constexpr Micros kC = 1'000'000;  // one credit

Transfer Plain(std::string id, std::string debit, std::string credit, Micros amount,
               std::string code = "charge") {
  return Transfer{.id = std::move(id), .debit = std::move(debit), .credit = std::move(credit),
                  .amount = amount, .code = std::move(code), .reference = "job-1"};
}
Transfer Grant(std::string id, std::string to, Micros amount) {
  return Plain(std::move(id), std::string(kTreasury), std::move(to), amount, std::string(kCodeGrant));
}
Transfer Pending(std::string id, std::string debit, Micros amount, std::int64_t timeout_s = 0,
                 std::int64_t at_us = 0) {
  Transfer t = Plain(std::move(id), std::move(debit), std::string(kRevenue), amount, "hold");
  t.flags = tf::kPending;
  t.timeout_s = timeout_s;
  t.at_us = at_us;
  return t;
}
Transfer Post(std::string id, std::string hold, Micros amount, std::int64_t at_us = 0) {
  return Transfer{.id = std::move(id), .amount = amount, .flags = tf::kPostPending,
                  .pending_id = std::move(hold), .code = "charge", .at_us = at_us};
}
Transfer Void(std::string id, std::string hold, Micros amount = 0) {
  return Transfer{.id = std::move(id), .amount = amount, .flags = tf::kVoidPending,
                  .pending_id = std::move(hold), .code = "release"};
}

// How the ledger uses its store: reading it, reading its memory of it
// (LedgerOptions::sole_writer), or that and writing behind in groups of two
// transfers (write_behind), so that groups are written in the middle of every
// test below.
enum class Mode { kStore, kSoleWriter, kWriteBehind };
std::string ModeSuffix(Mode m) {
  return m == Mode::kStore ? "" : m == Mode::kSoleWriter ? "_sole_writer" : "_write_behind";
}

// Every backend, and each in every mode: the same tables either way.
class LedgerTest : public ::testing::TestWithParam<std::tuple<store::testing::Backend, Mode>> {
 protected:
  LedgerOptions Options() const {
    const Mode m = std::get<1>(GetParam());
    return {.sole_writer = m != Mode::kStore, .write_behind = m == Mode::kWriteBehind ? 2u : 0u};
  }
  // Before a test reads or changes the store behind the ledger's back.
  void Synced() { ASSERT_TRUE(ledger_->Sync()); }
  void SetUp() override {
    auto db = store::testing::FreshStore(std::get<0>(GetParam()));
    if (!db) GTEST_SKIP() << db.error().message;
    db_ = std::move(*db);
    auto l = Ledger::Open(db_->store(), Options());
    ASSERT_TRUE(l) << l.error().ToString();
    ledger_.emplace(std::move(*l));
    for (const char* name : {"ads", "search", "vision"})
      ASSERT_TRUE(ledger_->CreateAccount({.name = name})) << name;
    ASSERT_EQ(Do(Grant("g-ads", "ads", 100 * kC)), "ok");
  }

  std::string Do(const Transfer& t) {
    auto r = ledger_->CreateTransfer(t);
    if (!r) return "error: " + r.error().ToString();
    return r->name();
  }
  std::vector<std::string> DoAll(const std::vector<Transfer>& ts) {
    auto r = ledger_->CreateTransfers(ts);
    if (!r) return {"error: " + r.error().ToString()};
    std::vector<std::string> names;
    for (const auto& o : *r) names.push_back(o.name());
    return names;
  }
  Account Acct(const std::string& name) {
    auto a = ledger_->GetAccount(name);
    EXPECT_TRUE(a && *a) << name;
    return a && *a ? **a : Account{};
  }
  Micros Balance(const std::string& name) { return Acct(name).balance(); }
  void ExpectChecked() {
    auto c = ledger_->Check();
    ASSERT_TRUE(c) << c.error().ToString();
    EXPECT_TRUE(c->ok()) << ::testing::PrintToString(c->violations);
  }

  std::unique_ptr<store::testing::TestStore> db_;
  std::optional<Ledger> ledger_;
};

// One transfer against the book {ads: 100 credits, search: 0, vision: 0}:
// its result, and the balances of ads and search after it.
struct Row {
  const char* name;
  Transfer t;
  const char* result;
  Micros ads;
  Micros search;
};

TEST_P(LedgerTest, SingleTransferTable) {
  std::string long_id(257, 'x');
  const std::vector<Row> rows = {
      {"plain", Plain("t", "ads", "search", 30 * kC), "ok", 70 * kC, 30 * kC},
      {"exactly the balance", Plain("t", "ads", "search", 100 * kC), "ok", 0, 100 * kC},
      {"one micro-credit past the budget", Plain("t", "ads", "search", 100 * kC + 1), "exceeds_credits", 100 * kC, 0},
      {"from an empty account", Plain("t", "search", "ads", 1), "exceeds_credits", 100 * kC, 0},
      {"to itself", Plain("t", "ads", "ads", 1), "accounts_must_be_different", 100 * kC, 0},
      {"zero", Plain("t", "ads", "search", 0), "amount_must_be_positive", 100 * kC, 0},
      {"negative", Plain("t", "ads", "search", -5), "amount_must_be_positive", 100 * kC, 0},
      {"unknown debit", Plain("t", "nobody", "search", 1), "debit_account_not_found", 100 * kC, 0},
      {"unknown credit", Plain("t", "ads", "nobody", 1), "credit_account_not_found", 100 * kC, 0},
      {"no code", Plain("t", "ads", "search", 1, ""), "code_must_not_be_empty", 100 * kC, 0},
      {"the ledger's own code", Plain("t", "ads", "search", 1, "expiry"), "code_reserved", 100 * kC, 0},
      {"no id", Plain("", "ads", "search", 1), "id_must_not_be_empty", 100 * kC, 0},
      {"id too long", Plain(long_id, "ads", "search", 1), "id_too_long", 100 * kC, 0},
      {"grant from a tenant", Plain("t", "ads", "search", 1, "grant"), "grant_must_debit_treasury", 100 * kC, 0},
      {"treasury paying a charge", Plain("t", std::string(kTreasury), "search", 1), "treasury_only_for_grants",
       100 * kC, 0},
      {"grant", Grant("t", "search", 5 * kC), "ok", 100 * kC, 5 * kC},
      {"timeout on a plain transfer", [] { auto t = Plain("t", "ads", "search", 1); t.timeout_s = 1; return t; }(),
       "timeout_reserved_for_pending_transfer", 100 * kC, 0},
      {"unknown flag", [] { auto t = Plain("t", "ads", "search", 1); t.flags = 1u << 9; return t; }(),
       "reserved_flag", 100 * kC, 0},
      {"pending and post", [] { auto t = Plain("t", "ads", "search", 1); t.flags = tf::kPending | tf::kPostPending; return t; }(),
       "flags_are_mutually_exclusive", 100 * kC, 0},
      {"pending id on a plain transfer", [] { auto t = Plain("t", "ads", "search", 1); t.pending_id = "h"; return t; }(),
       "pending_id_must_be_empty", 100 * kC, 0},
      {"post of nothing", Post("t", "", 1), "pending_id_must_not_be_empty", 100 * kC, 0},
      {"post of an unknown hold", Post("t", "nohold", 1), "pending_transfer_not_found", 100 * kC, 0},
      {"post of itself", Post("t", "t", 1), "pending_id_must_be_different", 100 * kC, 0},
      {"reversal of nothing", Plain("t", "search", "ads", 1, "reversal"), "reversed_transfer_not_found", 100 * kC, 0},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    SetUp();  // a fresh book per row
    if (IsSkipped()) return;
    EXPECT_EQ(Do(row.t), row.result);
    EXPECT_EQ(Balance("ads"), row.ads);
    EXPECT_EQ(Balance("search"), row.search);
    ExpectChecked();
  }
}

TEST_P(LedgerTest, OverflowIsRejectedNotWrapped) {
  // The treasury has granted 100 credits: it can grant INT64_MAX - 100 more.
  const Micros g = INT64_MAX - 100 * kC;
  ASSERT_EQ(Do(Grant("big", "search", g)), "ok");
  EXPECT_EQ(Do(Grant("more", "search", 1)), "overflows_debits");  // the treasury's debits
  // Credits circulate: search's credits grow past any supply and overflow.
  EXPECT_EQ(Do(Plain("there", "search", "vision", g)), "ok");
  EXPECT_EQ(Do(Plain("back", "vision", "search", g)), "overflows_credits");
  EXPECT_EQ(Balance("search"), 0);
  EXPECT_EQ(Balance("vision"), g);
  ExpectChecked();
}

TEST_P(LedgerTest, HoldPostedInPartsThenClosed) {
  ASSERT_EQ(Do(Pending("h1", "ads", 60 * kC)), "ok");
  EXPECT_EQ(Acct("ads").available(), 40 * kC);
  EXPECT_EQ(Balance("ads"), 100 * kC);  // a hold moves nothing yet
  EXPECT_EQ(Do(Pending("h2", "ads", 41 * kC)), "exceeds_credits");  // 60 held + 41 > 100
  EXPECT_EQ(Do(Post("p1", "h1", 20 * kC)), "ok");
  EXPECT_EQ(Balance("ads"), 80 * kC);
  EXPECT_EQ(Acct("ads").debits_pending, 40 * kC);
  EXPECT_EQ(Balance(std::string(kRevenue)), 20 * kC);
  EXPECT_EQ(Do(Post("p2", "h1", 40 * kC + 1)), "exceeds_pending_transfer_amount");
  EXPECT_EQ(Do(Post("p3", "h1", 0)), "amount_must_be_positive");
  EXPECT_EQ(Do(Post("p4", "h1", 40 * kC)), "ok");
  auto h = ledger_->GetHold("h1");
  ASSERT_TRUE(h && *h);
  EXPECT_EQ((*h)->state, HoldState::kPosted);
  EXPECT_EQ((*h)->remaining, 0);
  EXPECT_EQ(Do(Post("p5", "h1", 1)), "pending_transfer_already_posted");
  EXPECT_EQ(Do(Void("v1", "h1")), "pending_transfer_already_posted");
  EXPECT_EQ(Balance("ads"), 40 * kC);
  EXPECT_EQ(Acct("ads").debits_pending, 0);
  ExpectChecked();
}

TEST_P(LedgerTest, VoidReleasesWhatRemains) {
  ASSERT_EQ(Do(Pending("h", "ads", 50 * kC)), "ok");
  ASSERT_EQ(Do(Post("p", "h", 10 * kC)), "ok");
  EXPECT_EQ(Do(Void("v-bad", "h", 39 * kC)), "amount_must_be_zero_or_remaining");
  EXPECT_EQ(Do(Void("v", "h", 40 * kC)), "ok");
  EXPECT_EQ(Acct("ads").available(), 90 * kC);
  EXPECT_EQ(Do(Void("v", "h")), "exists");  // a retry that left the amount out
  EXPECT_EQ(Do(Post("p-late", "h", 1)), "pending_transfer_already_voided");
  auto t = ledger_->GetTransfer("v");
  ASSERT_TRUE(t && *t);
  EXPECT_EQ((*t)->transfer.amount, 40 * kC);  // recorded: what it released
  EXPECT_EQ((*t)->transfer.debit, "ads");
  ExpectChecked();
}

TEST_P(LedgerTest, PostOrVoidMustNameTheHoldsAccounts) {
  ASSERT_EQ(Do(Pending("h", "ads", 5 * kC)), "ok");
  Transfer p = Post("p", "h", 1);
  p.debit = "search";
  EXPECT_EQ(Do(p), "pending_transfer_has_different_debit");
  p = Post("p2", "h", 1);
  p.credit = "search";
  EXPECT_EQ(Do(p), "pending_transfer_has_different_credit");
  p = Post("p3", "h", 1);
  p.debit = "ads";
  p.credit = std::string(kRevenue);
  EXPECT_EQ(Do(p), "ok");
}

TEST_P(LedgerTest, HoldsExpire) {
  constexpr std::int64_t t0 = 1'000'000'000;  // µs
  ASSERT_EQ(Do(Pending("h", "ads", 30 * kC, /*timeout_s=*/60, t0)), "ok");
  ASSERT_EQ(Do(Pending("h-forever", "ads", 10 * kC)), "ok");
  EXPECT_EQ(Do(Post("p-in-time", "h", kC, t0 + 59'999'999)), "ok");
  EXPECT_EQ(Do(Post("p-late", "h", kC, t0 + 60'000'000)), "pending_transfer_expired");
  auto n = ledger_->ExpireHolds(t0 + 59'999'999);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 0);
  n = ledger_->ExpireHolds(t0 + 60'000'000);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 1);
  auto h = ledger_->GetHold("h");
  ASSERT_TRUE(h && *h);
  EXPECT_EQ((*h)->state, HoldState::kExpired);
  EXPECT_EQ(Acct("ads").debits_pending, 10 * kC);  // only the hold without timeout
  EXPECT_EQ(Balance("ads"), 99 * kC);
  n = ledger_->ExpireHolds(t0 + 999'000'000);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 0);  // once only
  EXPECT_EQ(Do(Void("v", "h")), "pending_transfer_expired");
  ExpectChecked();
}

TEST_P(LedgerTest, RetriesAnswerAsTheFirstTime) {
  Transfer t = Plain("t", "ads", "search", 30 * kC);
  ASSERT_EQ(Do(t), "ok");
  t.at_us = 123;  // a retry later: the time is not part of the request
  EXPECT_EQ(Do(t), "exists");
  EXPECT_EQ(Balance("search"), 30 * kC);  // not applied twice
  const std::vector<std::pair<std::function<void(Transfer&)>, std::string>> changes = {
      {[](Transfer& x) { x.amount += 1; }, "exists_with_different_amount"},
      {[](Transfer& x) { x.debit = "vision"; }, "exists_with_different_debit"},
      {[](Transfer& x) { x.credit = "vision"; }, "exists_with_different_credit"},
      {[](Transfer& x) { x.code = "other"; }, "exists_with_different_code"},
      {[](Transfer& x) { x.reference = "job-2"; }, "exists_with_different_reference"},
      {[](Transfer& x) { x.reason = "why"; }, "exists_with_different_reason"},
      {[](Transfer& x) { x.flags = tf::kPending; }, "exists_with_different_flags"},
      {[](Transfer& x) { x.pending_id = "h"; }, "exists_with_different_pending_id"},
      {[](Transfer& x) { x.timeout_s = 9; }, "exists_with_different_timeout"},
  };
  for (const auto& [change, want] : changes) {
    Transfer u = t;
    change(u);
    EXPECT_EQ(Do(u), want);
  }
  // A rejection is recorded too: the same request is rejected the same way
  // even after the budget has grown, and a new id is needed to try again.
  Transfer big = Plain("big", "search", "vision", 50 * kC);
  EXPECT_EQ(Do(big), "exceeds_credits");
  ASSERT_EQ(Do(Grant("g-search", "search", 100 * kC)), "ok");
  EXPECT_EQ(Do(big), "exceeds_credits");
  big.id = "big-2";
  EXPECT_EQ(Do(big), "ok");
  ExpectChecked();
}

TEST_P(LedgerTest, DuplicateIdInOneBatch) {
  EXPECT_THAT(DoAll({Plain("t", "ads", "search", kC), Plain("t", "ads", "search", kC)}),
              ::testing::ElementsAre("ok", "exists"));
  EXPECT_EQ(Balance("search"), kC);
}

TEST_P(LedgerTest, LinkedChainsSucceedOrFailTogether) {
  auto linked = [](Transfer t) {
    t.flags |= tf::kLinked;
    return t;
  };
  // The third fails: the first two are undone and say so.
  const std::vector<Transfer> chain = {linked(Plain("a", "ads", "search", 10 * kC)),
                                       linked(Plain("b", "ads", "vision", 10 * kC)),
                                       Plain("c", "search", "vision", 11 * kC)};
  EXPECT_THAT(DoAll(chain), ::testing::ElementsAre("linked_event_failed", "linked_event_failed", "exceeds_credits"));
  EXPECT_EQ(Balance("ads"), 100 * kC);
  EXPECT_EQ(Balance("search"), 0);
  EXPECT_THAT(DoAll(chain), ::testing::ElementsAre("linked_event_failed", "linked_event_failed", "exceeds_credits"));
  // Transfers after a failed chain in the same batch still apply.
  EXPECT_THAT(DoAll({linked(Plain("d", "ads", "search", kC)), Plain("e", "search", "nobody", kC),
                     Plain("f", "ads", "vision", kC)}),
              ::testing::ElementsAre("linked_event_failed", "credit_account_not_found", "ok"));
  EXPECT_EQ(Balance("vision"), kC);
  // A chain left open fails at its last event.
  EXPECT_THAT(DoAll({linked(Plain("g", "ads", "search", kC)), linked(Plain("h", "ads", "search", kC))}),
              ::testing::ElementsAre("linked_event_failed", "linked_event_chain_open"));
  EXPECT_EQ(Balance("search"), 0);
  // A hold and its first post in one chain; a retry of the committed chain.
  const std::vector<Transfer> ok_chain = {linked(Pending("hold", "ads", 20 * kC)), Post("post", "hold", 5 * kC)};
  EXPECT_THAT(DoAll(ok_chain), ::testing::ElementsAre("ok", "ok"));
  EXPECT_THAT(DoAll(ok_chain), ::testing::ElementsAre("exists", "exists"));
  EXPECT_EQ(Balance("ads"), 94 * kC);
  EXPECT_EQ(Acct("ads").debits_pending, 15 * kC);
  // A chain mixing a committed event with a new one is not a retry.
  EXPECT_THAT(DoAll({ok_chain[0], Plain("new", "ads", "vision", kC)}),
              ::testing::ElementsAre("exists", "linked_event_failed"));
  // Re-sent with another flag, it is not the same request.
  EXPECT_THAT(DoAll({linked(Plain("f", "ads", "vision", kC)), Plain("new2", "ads", "vision", kC)}),
              ::testing::ElementsAre("exists_with_different_flags", "linked_event_failed"));
  EXPECT_EQ(Balance("vision"), kC);
  ExpectChecked();
}

// A failed chain in the middle of a batch undoes exactly its own effects:
// the hold it posted to, the hold it placed, the reversal it counted, the
// accounts it moved, and the sequence numbers; what came before it in the
// batch stands, and what comes after sees the state as the chain never ran.
TEST_P(LedgerTest, AFailedChainUndoesOnlyItself) {
  auto linked = [](Transfer t) {
    t.flags |= tf::kLinked;
    return t;
  };
  ASSERT_EQ(Do(Pending("h", "ads", 20 * kC)), "ok");
  ASSERT_EQ(Do(Plain("t", "ads", "search", 10 * kC)), "ok");
  Transfer rev = Plain("r1", "search", "ads", 10 * kC, "reversal");
  rev.reference = "t";
  Transfer rev2 = rev;
  rev2.id = "r2";
  const std::vector<Transfer> batch = {
      Plain("before", "ads", "vision", 5 * kC),       // stands
      linked(Post("p1", "h", 8 * kC)),                // undone: the hold keeps 20
      linked(rev),                                    // undone: t is still reversible in full
      linked(Pending("h2", "vision", 2 * kC)),        // undone: no such hold afterwards
      linked(Plain("move", "vision", "search", kC)),  // undone
      Plain("bad", "search", "nobody", kC),           // fails the chain
      Post("p2", "h", 20 * kC),                       // the whole hold: it still has 20
      rev2,                                           // the full reversal still fits
      Post("p3", "h2", kC),                           // h2 was never placed
      Plain("after", "vision", "search", 5 * kC)};    // vision has its 5, not 3 - 1
  auto out = ledger_->CreateTransfers(batch);
  ASSERT_TRUE(out) << out.error().ToString();
  std::vector<std::string> names;
  for (const auto& o : *out) names.push_back(o.name());
  EXPECT_THAT(names, ::testing::ElementsAre("ok", "linked_event_failed", "linked_event_failed", "linked_event_failed",
                                            "linked_event_failed", "credit_account_not_found", "ok", "ok",
                                            "pending_transfer_not_found", "ok"));
  // Every record of the batch takes the next number: the undone chain's
  // numbers are reused by its rejections, leaving no gap.
  for (size_t i = 1; i < out->size(); ++i) EXPECT_EQ((*out)[i].seq, (*out)[i - 1].seq + 1) << i;
  EXPECT_EQ(Balance("ads"), 100 * kC - 10 * kC - 5 * kC - 20 * kC + 10 * kC);
  EXPECT_EQ(Acct("ads").debits_pending, 0);
  EXPECT_EQ(Balance("vision"), 0);
  EXPECT_EQ(Acct("vision").debits_pending, 0);
  EXPECT_EQ(Balance("search"), 5 * kC);
  // The failed chain's records keep their ids; a retry answers as the first time.
  EXPECT_EQ(Do(linked(Post("p1", "h", 8 * kC))), "linked_event_failed");
  ExpectChecked();
}

TEST_P(LedgerTest, ReversalsCorrectWithoutErasing) {
  ASSERT_EQ(Do(Plain("t", "ads", "search", 30 * kC)), "ok");
  Transfer rev = Plain("r1", "search", "ads", 10 * kC, "reversal");
  rev.reference = "t";
  rev.reason = "overcharge";
  EXPECT_EQ(Do(rev), "ok");
  EXPECT_EQ(Balance("ads"), 80 * kC);
  rev.id = "r2";
  rev.amount = 20 * kC + 1;
  EXPECT_EQ(Do(rev), "reversal_exceeds_original");
  rev.id = "r3";  // r2 is taken by its rejection
  rev.amount = 20 * kC;
  EXPECT_EQ(Do(rev), "ok");
  rev.id = "r4";
  rev.amount = 1;
  EXPECT_EQ(Do(rev), "reversal_exceeds_original");
  Transfer wrong = Plain("r5", "vision", "ads", 1, "reversal");
  wrong.reference = "t";
  EXPECT_EQ(Do(wrong), "reversal_must_swap_accounts");
  // Reversing a grant takes credits out of circulation.
  Transfer ungrant = Plain("ug", "ads", std::string(kTreasury), 50 * kC, "reversal");
  ungrant.reference = "g-ads";
  EXPECT_EQ(Do(ungrant), "ok");
  auto c = ledger_->Check();
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->ok());
  EXPECT_EQ(c->grants, 50 * kC);
  EXPECT_EQ(c->tenant_balances, 50 * kC);
  EXPECT_EQ(Balance("ads"), 50 * kC);
  // Every entry is still there.
  auto st = ledger_->Statement("ads");
  ASSERT_TRUE(st);
  ASSERT_EQ(st->size(), 5u);  // grant, t, r1, r3, ug
  EXPECT_EQ(st->back().balance, 50 * kC);
  EXPECT_EQ((*st)[1].delta, -30 * kC);
  EXPECT_EQ((*st)[2].delta, 10 * kC);
}

TEST_P(LedgerTest, CheckFindsTampering) {
  ASSERT_EQ(Do(Plain("t", "ads", "search", 30 * kC)), "ok");
  ASSERT_EQ(Do(Pending("h", "ads", 5 * kC)), "ok");
  ExpectChecked();
  ASSERT_TRUE(db_->store().Write([](store::Tx& tx) -> Status {
    TIDAL_RETURN_IF_ERROR(tx.Exec("UPDATE ledger_accounts SET credits_posted = credits_posted + 1 WHERE name = 'search'"));
    return Ok();
  }));
  auto c = ledger_->Check();
  ASSERT_TRUE(c);
  ASSERT_FALSE(c->ok());
  EXPECT_THAT(c->violations.front(), HasSubstr("account 'search'"));
  ASSERT_TRUE(db_->store().Write([](store::Tx& tx) -> Status {
    TIDAL_RETURN_IF_ERROR(tx.Exec("UPDATE ledger_accounts SET credits_posted = credits_posted - 1 WHERE name = 'search'"));
    TIDAL_RETURN_IF_ERROR(tx.Exec("UPDATE ledger_holds SET remaining = 1 WHERE id = 'h'"));
    return Ok();
  }));
  c = ledger_->Check();
  ASSERT_TRUE(c);
  ASSERT_EQ(c->violations.size(), 1u);
  EXPECT_THAT(c->violations.front(), HasSubstr("hold 'h'"));
  ASSERT_TRUE(db_->store().Write([](store::Tx& tx) -> Status {
    TIDAL_RETURN_IF_ERROR(tx.Exec("UPDATE ledger_holds SET remaining = amount WHERE id = 'h'"));
    TIDAL_RETURN_IF_ERROR(tx.Exec("DELETE FROM ledger_transfers WHERE id = 't'"));
    return Ok();
  }));
  c = ledger_->Check();
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->ok());  // a lost entry: the balances no longer sum from entries
}

// Check reads the transfers page by page (a simulated market holds
// millions): every page size gives every transfer, rejected ones too, once,
// in ledger order, and a reader's error stops the reading.
TEST_P(LedgerTest, TransfersAreReadInPages) {
  ASSERT_EQ(Do(Plain("t1", "ads", "search", 1 * kC)), "ok");
  ASSERT_EQ(Do(Plain("t2", "search", "vision", 2 * kC)), "exceeds_credits");
  ASSERT_EQ(Do(Pending("h", "ads", 3 * kC)), "ok");
  ASSERT_EQ(Do(Post("p", "h", 1 * kC)), "ok");
  ASSERT_EQ(Do(Plain("t3", "ads", "vision", 4 * kC)), "ok");
  const std::vector<std::string> want = {"g-ads", "t1", "t2", "h", "p", "t3"};
  Synced();
  for (std::int64_t page : {1, 2, 4, 5, 6, 7, 4096}) {
    std::vector<std::string> ids;
    std::vector<std::int64_t> seqs;
    ASSERT_TRUE(db_->store().Read([&](store::Tx& tx) -> Status {
      return rows::ForEachTransfer(
          tx,
          [&](const TransferRecord& r) -> Status {
            ids.push_back(r.transfer.id);
            seqs.push_back(r.seq);
            return Ok();
          },
          page);
    })) << page;
    EXPECT_EQ(ids, want) << "page " << page;
    EXPECT_TRUE(std::is_sorted(seqs.begin(), seqs.end()) && std::adjacent_find(seqs.begin(), seqs.end()) == seqs.end())
        << "page " << page;
  }
  int seen = 0;
  auto stopped = db_->store().Read([&](store::Tx& tx) -> Status {
    return rows::ForEachTransfer(
        tx,
        [&](const TransferRecord&) -> Status {
          return ++seen == 3 ? MakeError(ErrorCode::kInternal, "stop") : Ok();
        },
        2);
  });
  ASSERT_FALSE(stopped);
  EXPECT_EQ(seen, 3);
  auto c = ledger_->Check();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->transfers, 5);
  EXPECT_EQ(c->rejected, 1);
}

TEST_P(LedgerTest, AccountRules) {
  EXPECT_TRUE(ledger_->CreateAccount({.name = "ads"}));  // exists, identical
  auto r = ledger_->CreateAccount({.name = "ads", .flags = 0});
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("exists already"));
  for (const char* bad : {"", "has space", "tab\there", "@sneaky"}) {
    auto e = ledger_->CreateAccount({.name = bad});
    EXPECT_FALSE(e) << bad;
  }
  EXPECT_FALSE(ledger_->CreateAccount({.name = std::string(129, 'a')}));
  EXPECT_FALSE(ledger_->CreateAccount({.name = "sys", .kind = AccountKind::kSystem}));
  EXPECT_FALSE(ledger_->CreateAccount({.name = "odd", .flags = 1u << 7}));
  auto all = ledger_->Accounts();
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 7u);  // 4 system + ads, search, vision
}

// Found by mutation testing (../shared/tools/mutate.py over ledger_batch.cc
// and ledger_check.cc): each test below fails on one surviving mutant.
TEST_P(LedgerTest, ReversalsInOneBatchAddUp) {
  ASSERT_EQ(Do(Plain("t", "ads", "search", 30 * kC)), "ok");
  Transfer a = Plain("ra", "search", "ads", 20 * kC, "reversal");
  a.reference = "t";
  Transfer b = a;
  b.id = "rb";
  b.amount = 11 * kC;  // 20 + 11 > 30
  EXPECT_THAT(DoAll({a, b}), ::testing::ElementsAre("ok", "reversal_exceeds_original"));
  // Neither a hold nor a rejected transfer can be reversed.
  ASSERT_EQ(Do(Pending("h", "ads", kC)), "ok");
  Transfer rh = Plain("rh", std::string(kRevenue), "ads", kC, "reversal");
  rh.reference = "h";
  EXPECT_EQ(Do(rh), "reversed_transfer_not_found");
  ASSERT_EQ(Do(Plain("refused", "search", "vision", 999 * kC)), "exceeds_credits");
  Transfer rr = Plain("rr", "vision", "search", kC, "reversal");
  rr.reference = "refused";
  EXPECT_EQ(Do(rr), "reversed_transfer_not_found");
  ExpectChecked();
}

TEST_P(LedgerTest, IdsUpTo256CharactersAreRecorded) {
  Transfer t = Plain(std::string(256, 'k'), "ads", "search", kC);
  EXPECT_EQ(Do(t), "ok");
  EXPECT_EQ(Do(t), "exists");  // recorded under its id, not applied twice
  EXPECT_EQ(Balance("search"), kC);
  // A chain with an unusable id fails whole; the unusable one is not recorded.
  Transfer empty = Plain("", "ads", "search", kC);
  empty.flags = tf::kLinked;
  EXPECT_THAT(DoAll({empty, Plain("x", "ads", "search", kC)}),
              ::testing::ElementsAre("id_must_not_be_empty", "linked_event_failed"));
  auto c = ledger_->Check();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->rejected, 1);  // only "x"
}

TEST_P(LedgerTest, RetriedPostNamesItsAccounts) {
  ASSERT_EQ(Do(Pending("h", "ads", 5 * kC)), "ok");
  Transfer p = Post("p", "h", kC);
  p.debit = "ads";
  p.credit = std::string(kRevenue);
  ASSERT_EQ(Do(p), "ok");
  Transfer q = p;
  q.debit = "search";
  EXPECT_EQ(Do(q), "exists_with_different_debit");
  q = p;
  q.credit = "vision";
  EXPECT_EQ(Do(q), "exists_with_different_credit");
  q = p;
  q.debit.clear();
  q.credit.clear();
  EXPECT_EQ(Do(q), "exists");  // leaving them out matches the hold's
}

TEST_P(LedgerTest, PendingCreditsCountTowardsOverflow) {
  const Micros g = INT64_MAX - 100 * kC;
  ASSERT_EQ(Do(Grant("big", "search", g)), "ok");
  ASSERT_EQ(Do(Plain("there", "search", "vision", g)), "ok");
  // search already has g credits posted; g more pending would overflow its credits.
  Transfer back = Plain("back", "vision", "search", g);
  back.flags = tf::kPending;
  EXPECT_EQ(Do(back), "overflows_credits");
  ExpectChecked();
}

TEST_P(LedgerTest, MixedChainsFailWherever) {
  ASSERT_EQ(Do(Plain("f", "ads", "vision", kC)), "ok");
  auto linked = [](Transfer t) {
    t.flags |= tf::kLinked;
    return t;
  };
  // The committed transfer last in the chain, and the chain not first in the batch.
  EXPECT_THAT(DoAll({Plain("solo", "ads", "vision", kC), linked(Plain("new", "ads", "search", kC)),
                     Plain("f", "ads", "vision", kC)}),
              ::testing::ElementsAre("ok", "linked_event_failed", "exists"));
  EXPECT_EQ(Balance("search"), 0);
  EXPECT_EQ(Balance("vision"), 2 * kC);
}

TEST_P(LedgerTest, CheckReplaysTimeoutsAndBudgets) {
  ASSERT_EQ(Do(Pending("h1", "ads", kC, /*timeout_s=*/1, /*at_us=*/5'000'000)), "ok");
  ExpectChecked();  // expires_us = 5 s + 1 s, as the replay computes it
  auto h = ledger_->GetHold("h1");
  ASSERT_TRUE(h && *h);
  EXPECT_EQ((*h)->expires_us, 6'000'000);
  // A hold made larger behind the ledger's back: past the budget in history.
  ASSERT_TRUE(db_->store().Write([](store::Tx& tx) -> Status {
    TIDAL_RETURN_IF_ERROR(tx.Exec("UPDATE ledger_transfers SET amount = 200000000 WHERE id = 'h1'"));
    return Ok();
  }));
  auto c = ledger_->Check();
  ASSERT_TRUE(c);
  EXPECT_THAT(::testing::PrintToString(c->violations), HasSubstr("spends more than it has"));
}

TEST_P(LedgerTest, CreditsMayBeCappedByDebits) {
  // An account that may be credited only up to what it paid out (a refund pool).
  ASSERT_TRUE(ledger_->CreateAccount({.name = "refunds", .flags = account_flags::kCreditsMustNotExceedDebits}));
  ASSERT_EQ(Do(Plain("out", "refunds", "search", 5 * kC)), "ok");
  EXPECT_EQ(Do(Plain("back", "ads", "refunds", 5 * kC)), "ok");  // credits = debits: allowed
  EXPECT_EQ(Do(Plain("more", "ads", "refunds", 1)), "exceeds_debits");
  ExpectChecked();
}

TEST_P(LedgerTest, CheckFindsAPostMovedToOtherAccounts) {
  ASSERT_EQ(Do(Pending("h", "ads", 5 * kC)), "ok");
  ASSERT_EQ(Do(Post("p", "h", kC)), "ok");
  Synced();
  ASSERT_TRUE(db_->store().Write([](store::Tx& tx) -> Status {
    TIDAL_RETURN_IF_ERROR(tx.Exec("UPDATE ledger_transfers SET debit = 'search' WHERE id = 'p'"));
    return Ok();
  }));
  auto c = ledger_->Check();
  ASSERT_TRUE(c);
  EXPECT_THAT(::testing::PrintToString(c->violations), HasSubstr("other accounts than its hold"));
}

// Random operations over fresh accounts (new names per case, in one store)
// against a model written here; after each case the stored balances equal the
// model's and Check() holds.
TEST_P(LedgerTest, RandomOperationsMatchAModel) {
  int case_no = 0;
  const bool ok = rc::check("ledger matches a model", [&] {
    const std::string p = fmt::format("c{}-", case_no++);
    const std::vector<std::string> names = {p + "a", p + "b", p + "c", p + "sink"};
    for (const auto& n : names) RC_ASSERT(ledger_->CreateAccount({.name = n}).has_value());
    RC_ASSERT(Do(Grant(p + "g", names[0], 100 * kC)) == "ok");
    std::map<std::string, Micros> posted, pending;
    for (const auto& n : names) posted[n] = pending[n] = 0;
    posted[names[0]] = 100 * kC;
    struct H {
      std::string debit;
      Micros remaining;
      bool open;
    };
    std::map<std::string, H> holds;
    const int n = *rc::gen::inRange(1, 40);
    for (int i = 0; i < n; ++i) {
      const int kind = *rc::gen::inRange(0, 4);
      const std::string a = names[*rc::gen::inRange<std::size_t>(0, 3)];
      const std::string b = names[*rc::gen::inRange<std::size_t>(0, 4)];
      const Micros amount = *rc::gen::inRange<Micros>(-1, 60) * kC / 2;
      const std::string tid = p + "op" + std::to_string(i);
      if (kind == 0 || holds.empty()) {
        const bool want = a != b && amount > 0 && posted[a] - pending[a] >= amount;
        const std::string got = Do(Plain(tid, a, b, amount));
        RC_ASSERT((got == "ok") == want);
        if (want) {
          posted[a] -= amount;
          posted[b] += amount;
        }
      } else if (kind == 1) {
        const bool want = amount > 0 && posted[a] - pending[a] >= amount;
        Transfer t = Pending(tid, a, amount);
        t.credit = names[3];
        RC_ASSERT((Do(t) == "ok") == want);
        if (want) {
          pending[a] += amount;
          holds[tid] = H{a, amount, true};
        }
      } else {
        auto it = holds.begin();
        std::advance(it, *rc::gen::inRange<std::size_t>(0, holds.size()));
        H& h = it->second;
        if (kind == 2) {
          const bool want = h.open && amount > 0 && amount <= h.remaining;
          RC_ASSERT((Do(Post(tid, it->first, amount)) == "ok") == want);
          if (want) {
            pending[h.debit] -= amount;
            posted[h.debit] -= amount;
            posted[names[3]] += amount;
            h.remaining -= amount;
            if (h.remaining == 0) h.open = false;
          }
        } else {
          RC_ASSERT((Do(Void(tid, it->first)) == "ok") == h.open);
          if (h.open) {
            pending[h.debit] -= h.remaining;
            h.remaining = 0;
            h.open = false;
          }
        }
      }
    }
    for (const auto& name : names) {
      const Account acct = Acct(name);
      RC_ASSERT(acct.balance() == posted[name]);
      RC_ASSERT(acct.debits_pending == pending[name]);
    }
  });
  EXPECT_TRUE(ok);
  ExpectChecked();
}

TEST_P(LedgerTest, SurvivesReopen) {
  ASSERT_EQ(Do(Plain("t", "ads", "search", 30 * kC)), "ok");
  ASSERT_EQ(Do(Pending("h", "ads", 5 * kC)), "ok");
  Synced();
  auto reopened = db_->Reopen();
  ASSERT_TRUE(reopened) << reopened.error().ToString();
  auto l = Ledger::Open(db_->store(), Options());
  ASSERT_TRUE(l);
  ledger_.emplace(std::move(*l));
  EXPECT_EQ(Balance("search"), 30 * kC);
  EXPECT_EQ(Acct("ads").debits_pending, 5 * kC);
  EXPECT_EQ(Do(Plain("t", "ads", "search", 30 * kC)), "exists");
  ExpectChecked();
}

INSTANTIATE_TEST_SUITE_P(Backends, LedgerTest,
                         ::testing::Combine(::testing::ValuesIn(store::testing::AllBackends()),
                                            ::testing::Values(Mode::kStore, Mode::kSoleWriter, Mode::kWriteBehind)),
                         [](const auto& info) {
                           return store::testing::BackendName(std::get<0>(info.param)) +
                                  ModeSuffix(std::get<1>(info.param));
                         });

// LedgerOptions::write_behind on its own: decided at once, in the store by
// groups, never read stale, and a group the store refuses ends the ledger.
class WriteBehindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = store::testing::FreshStore(store::testing::Backend::kSqlite);
    ASSERT_TRUE(db) << db.error().ToString();
    db_ = std::move(*db);
    auto l = Ledger::Open(db_->store(), {.sole_writer = true, .write_behind = 3});
    ASSERT_TRUE(l) << l.error().ToString();
    ledger_.emplace(std::move(*l));
    ASSERT_TRUE(ledger_->CreateAccount({.name = "ads"}));
    ASSERT_TRUE(ledger_->CreateAccount({.name = "search"}));
  }
  std::string Do(const Transfer& t) {
    auto r = ledger_->CreateTransfer(t);
    return r ? r->name() : "error: " + r.error().ToString();
  }
  // Transfers the store holds, read behind the ledger's back.
  std::int64_t Stored() {
    std::int64_t n = -1;
    EXPECT_TRUE(db_->store().Read([&](store::Tx& tx) -> Status {
      TIDAL_ASSIGN_OR_RETURN(store::Rows rs, tx.Query("SELECT COUNT(*) FROM ledger_transfers"));
      TIDAL_ASSIGN_OR_RETURN(n, store::AsInt(rs.rows.front(), 0));
      return Ok();
    }));
    return n;
  }
  std::unique_ptr<store::testing::TestStore> db_;
  std::optional<Ledger> ledger_;
};

TEST_F(WriteBehindTest, GroupsReachTheStoreWhole) {
  ASSERT_EQ(Do(Grant("g", "ads", 10 * kC)), "ok");
  ASSERT_EQ(Do(Plain("t1", "ads", "search", kC)), "ok");
  EXPECT_EQ(Stored(), 0);  // two decided, the group is three
  ASSERT_EQ(Do(Plain("t2", "ads", "search", 20 * kC)), "exceeds_credits");  // recorded too
  EXPECT_EQ(Stored(), 3);
  ASSERT_EQ(Do(Pending("h", "ads", 2 * kC)), "ok");
  EXPECT_EQ(Stored(), 3);
  // A read writes the group first: the store is never read stale.
  auto a = ledger_->GetAccount("ads");
  ASSERT_TRUE(a && *a);
  EXPECT_EQ((*a)->balance(), 9 * kC);
  EXPECT_EQ((*a)->debits_pending, 2 * kC);
  EXPECT_EQ(Stored(), 4);
  auto h = ledger_->GetHold("h");
  ASSERT_TRUE(h && *h);
  EXPECT_EQ((*h)->remaining, 2 * kC);
  auto c = ledger_->Check();
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->ok()) << ::testing::PrintToString(c->violations);
  EXPECT_EQ(c->transfers, 3);
  EXPECT_EQ(c->rejected, 1);
}

TEST_F(WriteBehindTest, RetriesAndReversalsOfUnwrittenTransfersReadThemBack) {
  ASSERT_EQ(Do(Grant("g", "ads", 10 * kC)), "ok");
  ASSERT_EQ(Do(Plain("t1", "ads", "search", 4 * kC)), "ok");
  ASSERT_EQ(Stored(), 0);
  EXPECT_EQ(Do(Plain("t1", "ads", "search", 4 * kC)), "exists");
  EXPECT_EQ(Do(Plain("t1", "ads", "search", 5 * kC)), "exists_with_different_amount");
  EXPECT_EQ(Stored(), 2);  // the retry wrote the group to read t1 back
  ASSERT_EQ(Do(Plain("t2", "ads", "search", kC)), "ok");
  Transfer rev = Plain("r0", "search", "ads", 3 * kC, std::string(kCodeReversal));
  rev.reference = "t2";
  EXPECT_EQ(Do(rev), "reversal_exceeds_original");
  rev.id = "r1";
  rev.reference = "t1";
  EXPECT_EQ(Do(rev), "ok");
  rev.id = "r2";
  rev.amount = 2 * kC;
  EXPECT_EQ(Do(rev), "reversal_exceeds_original");  // 3 of t1's 4 reversed already
  auto c = ledger_->Check();
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->ok()) << ::testing::PrintToString(c->violations);
  auto s = ledger_->GetAccount("search");
  ASSERT_TRUE(s && *s);
  EXPECT_EQ((*s)->balance(), 2 * kC);
}

TEST_F(WriteBehindTest, AGroupTheStoreRefusesEndsTheLedger) {
  ASSERT_TRUE(db_->store().Write([](store::Tx& tx) -> Status {
    TIDAL_RETURN_IF_ERROR(tx.Exec("CREATE TRIGGER full BEFORE INSERT ON ledger_transfers "
                                  "BEGIN SELECT RAISE(ABORT, 'disk full'); END"));
    return Ok();
  }));
  ASSERT_EQ(Do(Grant("g", "ads", 10 * kC)), "ok");  // decided, not written
  ASSERT_EQ(Do(Plain("t1", "ads", "search", kC)), "ok");
  EXPECT_THAT(Do(Plain("t2", "ads", "search", kC)), HasSubstr("disk full"));
  EXPECT_THAT(Do(Plain("t3", "ads", "search", kC)), HasSubstr("discard it and rerun"));
  auto c = ledger_->Check();
  ASSERT_FALSE(c);
  EXPECT_THAT(c.error().ToString(), HasSubstr("disk full"));
  EXPECT_EQ(Stored(), 0);
}

// A group is written several rows to a statement (rows::InsertTransfers and
// UpsertHolds, 32 to one statement, the rest one by one): 75 transfers, 49
// of them holds, in groups of at least 60, every field of every transfer and
// hold read back as it was decided; then one post from each hold, and the
// holds read back as the posts left them.
// On every backend there is (PostgreSQL when TIDAL_TEST_POSTGRES_URL is set).
void ManyRowsToAStatement(store::testing::Backend backend) {
  SCOPED_TRACE(store::testing::BackendName(backend));
  auto db = store::testing::FreshStore(backend);
  if (!db) return;  // the backend is not available here
  auto l = Ledger::Open((*db)->store(), {.sole_writer = true, .write_behind = 60});
  ASSERT_TRUE(l);
  ASSERT_TRUE(l->CreateAccount({.name = "ads"}));
  ASSERT_TRUE(l->CreateAccount({.name = "search"}));
  std::vector<Transfer> sent = {Grant("g", "ads", 5000 * kC)};
  for (int i = 0; i < 74; ++i) {
    Transfer t = i % 3 != 0 ? Pending(fmt::format("h{}", i), "ads", (i + 1) * kC, /*timeout_s=*/i, /*at_us=*/i * 7)
                            : Plain(fmt::format("t{}", i), "ads", "search", (i + 1) * kC);
    t.reference = fmt::format("job {}", i);
    t.reason = i % 2 ? "r" : "";
    t.at_us = i * 1000 + 1;
    if (i == 72) t.amount = 100'000 * kC;  // refused: recorded with its result
    sent.push_back(t);
  }
  for (std::size_t i = 0; i < sent.size(); i += 5) {
    auto out = l->CreateTransfers(std::span(sent).subspan(i, std::min<std::size_t>(5, sent.size() - i)));
    ASSERT_TRUE(out) << out.error().ToString();
  }
  // One credit posted from each hold: 49 holds changed in one group, written
  // over the rows the first group wrote (ON CONFLICT, several to a statement).
  for (const Transfer& t : std::vector<Transfer>(sent)) {
    if (!(t.flags & tf::kPending)) continue;
    auto out = l->CreateTransfer(Post("p" + t.id, t.id, kC, t.at_us));
    ASSERT_TRUE(out && out->ok()) << t.id;
  }
  int holds = 0;
  for (std::size_t i = 0; i < sent.size(); ++i) {
    const Transfer& t = sent[i];
    auto r = l->GetTransfer(t.id);
    ASSERT_TRUE(r && *r) << t.id;
    EXPECT_EQ((*r)->seq, static_cast<std::int64_t>(i) + 1) << t.id;
    EXPECT_EQ((*r)->transfer, t) << t.id;
    const bool refused = t.id == "t72";
    EXPECT_EQ((*r)->result, refused ? TransferResult::kExceedsCredits : TransferResult::kOk) << t.id;
    if (!(t.flags & tf::kPending)) continue;
    ++holds;
    auto h = l->GetHold(t.id);
    ASSERT_TRUE(h && *h) << t.id;
    EXPECT_EQ(**h, (Hold{.id = t.id, .debit = t.debit, .credit = t.credit, .amount = t.amount, .remaining = t.amount - kC,
                         .expires_us = t.timeout_s > 0 ? t.at_us + t.timeout_s * 1'000'000 : 0}))
        << t.id;
  }
  EXPECT_EQ(holds, 49);
  auto c = l->Check();
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->ok()) << ::testing::PrintToString(c->violations);
  EXPECT_EQ(c->transfers, 74 + 49);
  EXPECT_EQ(c->rejected, 1);
}

TEST(WriteBehind, ManyRowsToAStatementKeepEveryField) {
  for (auto backend : store::testing::AllBackends()) ManyRowsToAStatement(backend);
}

TEST(WriteBehind, AGroupOfOneIsEveryBatchAtOnce) {
  auto db = store::testing::FreshStore(store::testing::Backend::kSqlite);
  ASSERT_TRUE(db);
  auto l = Ledger::Open((*db)->store(), {.sole_writer = true, .write_behind = 1});
  ASSERT_TRUE(l);
  ASSERT_TRUE(l->CreateAccount({.name = "ads"}));
  auto out = l->CreateTransfer(Grant("g", "ads", kC));
  ASSERT_TRUE(out && out->ok());
  // Read behind the ledger's back, without a Sync: it is there.
  ASSERT_TRUE((*db)->store().Read([&](store::Tx& tx) -> Status {
    auto t = rows::LoadTransfer(tx, "g");
    EXPECT_TRUE(t && *t);
    auto a = rows::LoadAccount(tx, "ads");
    EXPECT_TRUE(a && *a && (*a)->balance() == kC);
    return Ok();
  }));
}

TEST(WriteBehind, NeedsTheSoleWriter) {
  auto db = store::testing::FreshStore(store::testing::Backend::kSqlite);
  ASSERT_TRUE(db);
  auto l = Ledger::Open((*db)->store(), {.write_behind = 8});
  ASSERT_FALSE(l);
  EXPECT_THAT(l.error().ToString(), HasSubstr("needs sole_writer"));
}

TEST(TransferResultNames, RoundTrip) {
  for (int r = 0; r <= static_cast<int>(TransferResult::kExceedsDebits); ++r) {
    const auto result = static_cast<TransferResult>(r);
    const std::string name = TransferResultName(result);
    EXPECT_NE(name, "unknown") << r;
    std::string field;
    EXPECT_EQ(ParseTransferResult(name, &field), result) << name;
  }
  std::string field;
  EXPECT_EQ(ParseTransferResult("exists_with_different_amount", &field), TransferResult::kExistsWithDifferentFields);
  EXPECT_EQ(field, "amount");
  EXPECT_EQ(ParseTransferResult("no_such_result"), std::nullopt);
}

}  // namespace
}  // namespace tidal::market
