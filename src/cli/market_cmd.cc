// `tidal market`: the ledger from the command line, against a store.
//
//   tidal market [--store sqlite:PATH|postgresql://...] [--json] COMMAND
//     tenant add NAME
//     grant TENANT AMOUNT --key K [--reason R]
//     transfer FROM TO AMOUNT --key K [--code C] [--reference R]
//     hold TENANT AMOUNT --key K [--to ACCOUNT] [--timeout S] [--reference R]
//     post HOLD_KEY [--amount A] [--key K]      (default: all that remains)
//     void HOLD_KEY [--key K]
//     reverse KEY --key K --reason R [--amount A]
//     balance [TENANT]
//     statement TENANT [--csv]
//     quote GPU_MODEL TIER [--gpus N] [--hours H] [--config FILE]
//     check
//
// Amounts are credits with up to six decimals (micro-credits inside). Exit
// status: 0 done (or already done: an idempotent retry), 1 the ledger refused
// (its result is printed), 2 bad input or an unusable store, 3 `check` found a
// violation (the first is printed).
#include <chrono>
#include <optional>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "market/ledger.h"
#include "market/market_config.h"
#include "market/pricing.h"
#include "market/tier.h"
#include "store/store.h"

namespace tidal::cli {
namespace {

using market::Micros;
using nlohmann::json;

constexpr int kRefused = 1;
constexpr int kBadInput = 2;
constexpr int kViolation = 3;

struct MarketArgs {
  std::string store;
  bool json = false;
  // operands
  std::string name, from, to = std::string(market::kRevenue), amount, key, code, reference, reason;
  std::string hold_key, config, gpu_model, tier;
  int64_t timeout_s = 0;
  int64_t gpus = 1;
  double hours = 1;
  bool csv = false;
};

int Fail(const Error& e) {
  fmt::print(stderr, "tidal market: {}\n", e.message);
  return kBadInput;
}

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Opens the store and the ledger, then runs fn.
int WithLedger(const MarketArgs& a, const std::function<int(market::Ledger&)>& fn) {
  const std::string url = a.store.empty() ? store::DefaultStoreUrl() : a.store;
  auto s = store::OpenStore(url);
  if (!s) return Fail(s.error());
  auto l = market::Ledger::Open(**s);
  if (!l) return Fail(l.error());
  return fn(*l);
}

json AccountJson(const market::Account& acct) {
  return {{"name", acct.name},
          {"kind", market::AccountKindName(acct.kind)},
          {"balance", market::FormatCredits(acct.balance())},
          {"available", market::FormatCredits(acct.available())},
          {"held", market::FormatCredits(acct.debits_pending)},
          {"balance_micros", acct.balance()},
          {"debits_posted", acct.debits_posted},
          {"credits_posted", acct.credits_posted},
          {"debits_pending", acct.debits_pending},
          {"credits_pending", acct.credits_pending}};
}

int Report(const MarketArgs& a, const market::Transfer& t, const market::TransferOutcome& o) {
  if (a.json) {
    fmt::print("{}\n", json{{"id", t.id}, {"result", o.name()}, {"seq", o.seq}, {"ok", o.succeeded()}}.dump());
  } else if (o.result == market::TransferResult::kExists) {
    fmt::print("{}: exists (done before, at #{}; nothing changed)\n", t.id, o.seq);
  } else if (o.ok()) {
    fmt::print("{}: ok (#{})\n", t.id, o.seq);
  } else {
    fmt::print(stderr, "tidal market: transfer {} refused: {}\n", t.id, o.name());
  }
  return o.succeeded() ? 0 : kRefused;
}

int Submit(const MarketArgs& a, market::Transfer t) {
  return WithLedger(a, [&](market::Ledger& l) {
    t.at_us = NowUs();
    auto o = l.CreateTransfer(t);
    if (!o) return Fail(o.error());
    return Report(a, t, *o);
  });
}

Result<Micros> Amount(const std::string& text, std::string_view what) {
  auto v = market::ParseCredits(text, market::Sign::kNonNegative);
  if (!v) return MakeError(ErrorCode::kInvalidArgument, "{} '{}': {}", what, text, v.error().message);
  if (*v <= 0) return MakeError(ErrorCode::kInvalidArgument, "{} '{}' must be more than 0", what, text);
  return *v;
}

int Check(const MarketArgs& a) {
  return WithLedger(a, [&](market::Ledger& l) {
    auto c = l.Check();
    if (!c) return Fail(c.error());
    if (a.json) {
      fmt::print("{}\n", json{{"ok", c->ok()},
                              {"accounts", c->accounts},
                              {"transfers", c->transfers},
                              {"rejected", c->rejected},
                              {"open_holds", c->open_holds},
                              {"grants", market::FormatCredits(c->grants)},
                              {"balances_outside_treasury", market::FormatCredits(c->tenant_balances)},
                              {"violations", c->violations}}
                             .dump(2));
    } else {
      fmt::print("{} accounts, {} transfers ({} rejected requests recorded), {} open holds\n", c->accounts,
                 c->transfers, c->rejected, c->open_holds);
      fmt::print("grants {} = balances outside the treasury {}: {}\n", market::FormatCredits(c->grants),
                 market::FormatCredits(c->tenant_balances), c->grants == c->tenant_balances ? "yes" : "NO");
      if (c->ok()) fmt::print("ledger check: ok\n");
    }
    if (!c->ok()) {
      fmt::print(stderr, "tidal market check: {} violation(s); the first: {}\n", c->violations.size(),
                 c->violations.front());
      return kViolation;
    }
    return 0;
  });
}

int Balance(const MarketArgs& a) {
  return WithLedger(a, [&](market::Ledger& l) {
    std::vector<market::Account> accounts;
    if (!a.name.empty()) {
      auto acct = l.GetAccount(a.name);
      if (!acct) return Fail(acct.error());
      if (!*acct) {
        fmt::print(stderr, "tidal market: no account '{}' (`tidal market balance` lists them)\n", a.name);
        return kBadInput;
      }
      accounts.push_back(**acct);
    } else {
      auto all = l.Accounts();
      if (!all) return Fail(all.error());
      accounts = std::move(*all);
    }
    if (a.json) {
      json arr = json::array();
      for (const auto& acct : accounts) arr.push_back(AccountJson(acct));
      fmt::print("{}\n", (a.name.empty() ? arr : arr.front()).dump(2));
      return 0;
    }
    fmt::print("{:<24} {:>20} {:>20} {:>20}\n", "account", "balance", "held", "available");
    for (const auto& acct : accounts)
      fmt::print("{:<24} {:>20} {:>20} {:>20}\n", acct.name, market::FormatCredits(acct.balance()),
                 market::FormatCredits(acct.debits_pending), market::FormatCredits(acct.available()));
    return 0;
  });
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

int Statement(const MarketArgs& a) {
  return WithLedger(a, [&](market::Ledger& l) {
    auto lines = l.Statement(a.name);
    if (!lines) return Fail(lines.error());
    if (a.json) {
      json arr = json::array();
      for (const auto& s : *lines) {
        const auto& t = s.record.transfer;
        arr.push_back({{"seq", s.record.seq}, {"id", t.id}, {"code", t.code}, {"reference", t.reference},
                       {"reason", t.reason}, {"debit", t.debit}, {"credit", t.credit},
                       {"amount", market::FormatCredits(t.amount)}, {"delta", market::FormatCredits(s.delta)},
                       {"balance", market::FormatCredits(s.balance)}, {"at_us", t.at_us}});
      }
      fmt::print("{}\n", arr.dump(2));
    } else if (a.csv) {
      fmt::print("seq,id,code,reference,reason,debit,credit,amount,delta,balance,at_us\n");
      for (const auto& s : *lines) {
        const auto& t = s.record.transfer;
        fmt::print("{},{},{},{},{},{},{},{},{},{},{}\n", s.record.seq, CsvField(t.id), CsvField(t.code),
                   CsvField(t.reference), CsvField(t.reason), CsvField(t.debit), CsvField(t.credit),
                   market::FormatCredits(t.amount), market::FormatCredits(s.delta), market::FormatCredits(s.balance),
                   t.at_us);
      }
    } else {
      fmt::print("{:>6}  {:<28} {:<16} {:<16} {:>18} {:>18}\n", "#", "id", "code", "reference", "change", "balance");
      for (const auto& s : *lines) {
        const auto& t = s.record.transfer;
        fmt::print("{:>6}  {:<28} {:<16} {:<16} {:>18} {:>18}\n", s.record.seq, t.id, t.code, t.reference,
                   s.delta == 0 ? std::string("(held)") : market::FormatCredits(s.delta),
                   market::FormatCredits(s.balance));
      }
    }
    return 0;
  });
}

int PostOrVoid(const MarketArgs& a, bool post) {
  return WithLedger(a, [&](market::Ledger& l) {
    market::Transfer t{.id = a.key.empty() ? fmt::format("{}:{}", post ? "post" : "void", a.hold_key) : a.key,
                       .flags = post ? market::transfer_flags::kPostPending : market::transfer_flags::kVoidPending,
                       .pending_id = a.hold_key,
                       .code = post ? "charge" : "release",
                       .at_us = NowUs()};
    if (post) {
      if (!a.amount.empty()) {
        if (a.key.empty())
          return Fail(Error{ErrorCode::kInvalidArgument,
                            "a partial post needs its own --key (a hold may be posted several times)"});
        auto v = Amount(a.amount, "--amount");
        if (!v) return Fail(v.error());
        t.amount = *v;
      } else {
        // All that remains; a retry finds its own transfer and answers "exists".
        auto prior = l.GetTransfer(t.id);
        if (!prior) return Fail(prior.error());
        auto hold = l.GetHold(a.hold_key);
        if (!hold) return Fail(hold.error());
        if (*prior) t.amount = (*prior)->transfer.amount;
        else if (*hold) t.amount = (*hold)->remaining;
      }
    }
    auto o = l.CreateTransfer(t);
    if (!o) return Fail(o.error());
    return Report(a, t, *o);
  });
}

struct QuoteArgs {
  std::string config, gpu_model, tier;
  int64_t gpus = 1;
  double hours = 1;
  bool json = false;
};

// A quote from the market config's prices. With no utilisation history (the
// daemon keeps one; this command does not) the pool is at its initial
// multiplier, and the quote says so.
int RunQuote(const QuoteArgs& q) {
  auto cfg = q.config.empty() ? Result<market::MarketConfig>(market::DefaultMarketConfig())
                              : market::ReadMarketFile(q.config);
  if (!cfg) return Fail(cfg.error());
  auto tier = market::ParseTier(q.tier);
  if (!tier) return Fail(tier.error());
  if (q.gpus <= 0 || !(q.hours > 0) || q.hours > 24 * 366)
    return Fail(Error{ErrorCode::kInvalidArgument, "--gpus must be > 0 and --hours in (0, 8784]"});
  const int64_t now_s = NowUs() / 1'000'000;
  market::MarketPrices prices(cfg->book, cfg->curve, cfg->pricer);
  if (auto s = prices.AddPool(q.gpu_model, now_s); !s) return Fail(s.error());
  const int64_t milli = q.gpus * 1000;
  const int64_t in_floor = *tier == market::Tier::kGuaranteed ? milli : 0;
  const int64_t duration_s = static_cast<int64_t>(q.hours * 3600.0 + 0.5);
  auto quote = prices.QuoteJob(q.gpu_model, *tier, now_s, duration_s, milli, in_floor);
  if (!quote) return Fail(quote.error());
  auto hourly = prices.PriceAt(q.gpu_model, *tier, now_s);
  if (!hourly) return Fail(hourly.error());
  if (q.json) {
    fmt::print("{}\n", json{{"gpu_model", q.gpu_model},
                            {"tier", market::TierName(*tier)},
                            {"gpus", q.gpus},
                            {"hours", q.hours},
                            {"price_per_gpu_hour", market::FormatCredits(*hourly)},
                            {"total", market::FormatCredits(quote->total)},
                            {"upper_bound_total", market::FormatCredits(quote->upper_bound_total)},
                            {"in_floor_total", market::FormatCredits(quote->in_floor_total)},
                            {"announced_until_s", quote->horizon_s - now_s},
                            {"beyond_horizon_s", quote->beyond_horizon_s},
                            {"config", cfg->source}}
                           .dump(2));
    return 0;
  }
  fmt::print("{} x {} ({}) for {} h: {} credits (price now {} per GPU-hour; at most {} if every unannounced "
             "period rose as far as it may)\n",
             q.gpus, q.gpu_model, market::TierName(*tier), q.hours, market::FormatCredits(quote->total),
             market::FormatCredits(*hourly), market::FormatCredits(quote->upper_bound_total));
  if (quote->beyond_horizon_s > 0)
    fmt::print("  prices are announced {} s ahead; the last {} s are priced at the last announced price\n",
               quote->horizon_s - now_s, quote->beyond_horizon_s);
  fmt::print("  no utilisation history here: the pool is at its initial multiplier ({})\n", cfg->source);
  return 0;
}

void RequireKey(CLI::App* cmd, MarketArgs& a) {
  cmd->add_option("--key", a.key, "idempotency key: a retry with the same key changes nothing")->required();
}

}  // namespace

void RegisterMarketCommands(CLI::App& app) {
  auto a = std::make_shared<MarketArgs>();
  CLI::App* m = app.add_subcommand("market", "the credit ledger: accounts, grants, holds, statements, quotes");
  m->require_subcommand(1);
  m->fallthrough();  // --store and --json may follow the subcommand too
  m->add_option("--store", a->store,
                "sqlite:PATH or postgresql://... (default: sqlite under the user's data directory)");
  m->add_flag("--json", a->json, "print JSON");

  CLI::App* tenant = m->add_subcommand("tenant", "tenant accounts");
  tenant->require_subcommand(1);
  CLI::App* add = tenant->add_subcommand("add", "create a tenant account (its balance is its budget)");
  add->add_option("NAME", a->name, "tenant name")->required();
  add->callback([a] {
    SetExitCode(WithLedger(*a, [&](market::Ledger& l) {
      if (auto s = l.CreateAccount({.name = a->name}); !s) return Fail(s.error());
      fmt::print("{}\n", a->json ? json{{"account", a->name}, {"ok", true}}.dump() : "account " + a->name + ": ok");
      return 0;
    }));
  });

  CLI::App* grant = m->add_subcommand("grant", "credit a tenant from the treasury (the only way credits enter)");
  grant->add_option("TENANT", a->name)->required();
  grant->add_option("AMOUNT", a->amount, "credits, up to 6 decimals")->required();
  RequireKey(grant, *a);
  grant->add_option("--reason", a->reason);
  grant->callback([a] {
    auto v = Amount(a->amount, "AMOUNT");
    if (!v) return SetExitCode(Fail(v.error()));
    SetExitCode(Submit(*a, {.id = a->key, .debit = std::string(market::kTreasury), .credit = a->name,
                            .amount = *v, .code = std::string(market::kCodeGrant), .reason = a->reason}));
  });

  CLI::App* transfer = m->add_subcommand("transfer", "move credits between accounts");
  transfer->add_option("FROM", a->from)->required();
  transfer->add_option("TO", a->to)->required();
  transfer->add_option("AMOUNT", a->amount)->required();
  RequireKey(transfer, *a);
  transfer->add_option("--code", a->code, "why (default: transfer)");
  transfer->add_option("--reference", a->reference, "for what: a job or lease id");
  transfer->callback([a] {
    auto v = Amount(a->amount, "AMOUNT");
    if (!v) return SetExitCode(Fail(v.error()));
    SetExitCode(Submit(*a, {.id = a->key, .debit = a->from, .credit = a->to, .amount = *v,
                            .code = a->code.empty() ? "transfer" : a->code, .reference = a->reference}));
  });

  CLI::App* hold = m->add_subcommand("hold", "reserve credits of a tenant (posted or voided later)");
  hold->add_option("TENANT", a->name)->required();
  hold->add_option("AMOUNT", a->amount)->required();
  RequireKey(hold, *a);
  hold->add_option("--to", a->to, "the account it will pay (default @revenue)");
  hold->add_option("--timeout", a->timeout_s, "expires after this many seconds (0: never)");
  hold->add_option("--reference", a->reference);
  hold->callback([a] {
    auto v = Amount(a->amount, "AMOUNT");
    if (!v) return SetExitCode(Fail(v.error()));
    if (a->timeout_s < 0) return SetExitCode(Fail(Error{ErrorCode::kInvalidArgument, "--timeout must be >= 0"}));
    SetExitCode(Submit(*a, {.id = a->key, .debit = a->name, .credit = a->to, .amount = *v,
                            .flags = market::transfer_flags::kPending, .timeout_s = a->timeout_s, .code = "hold",
                            .reference = a->reference}));
  });

  for (bool post : {true, false}) {
    CLI::App* c = m->add_subcommand(post ? "post" : "void", post ? "move held credits (all that remain, or --amount)"
                                                                 : "release what a hold still holds");
    c->add_option("HOLD_KEY", a->hold_key)->required();
    c->add_option("--key", a->key, "idempotency key (default post:HOLD_KEY / void:HOLD_KEY)");
    if (post) c->add_option("--amount", a->amount, "credits to post (default: all that remain)");
    c->callback([a, post] { SetExitCode(PostOrVoid(*a, post)); });
  }

  CLI::App* reverse = m->add_subcommand("reverse", "correct a transfer with a reversing one (nothing is erased)");
  reverse->add_option("KEY", a->hold_key, "the transfer to reverse")->required();
  RequireKey(reverse, *a);
  reverse->add_option("--reason", a->reason, "reason code")->required();
  reverse->add_option("--amount", a->amount, "part of it (default: all)");
  reverse->callback([a] {
    SetExitCode(WithLedger(*a, [&](market::Ledger& l) {
      auto orig = l.GetTransfer(a->hold_key);
      if (!orig) return Fail(orig.error());
      if (!*orig) {
        fmt::print(stderr, "tidal market: no transfer '{}'\n", a->hold_key);
        return kBadInput;
      }
      Micros amount = (*orig)->transfer.amount;
      if (!a->amount.empty()) {
        auto v = Amount(a->amount, "--amount");
        if (!v) return Fail(v.error());
        amount = *v;
      }
      market::Transfer t{.id = a->key, .debit = (*orig)->transfer.credit, .credit = (*orig)->transfer.debit,
                         .amount = amount, .code = std::string(market::kCodeReversal), .reference = a->hold_key,
                         .reason = a->reason, .at_us = NowUs()};
      auto o = l.CreateTransfer(t);
      if (!o) return Fail(o.error());
      return Report(*a, t, *o);
    }));
  });

  CLI::App* balance = m->add_subcommand("balance", "balances (all accounts, or one)");
  balance->add_option("TENANT", a->name);
  balance->callback([a] { SetExitCode(Balance(*a)); });

  CLI::App* statement = m->add_subcommand("statement", "an account's entries with the running balance");
  statement->add_option("TENANT", a->name)->required();
  statement->add_flag("--csv", a->csv, "print CSV");
  statement->callback([a] { SetExitCode(Statement(*a)); });

  CLI::App* quote = m->add_subcommand("quote", "what GPUs of a model and tier cost now");
  quote->add_option("GPU_MODEL", a->gpu_model)->required();
  quote->add_option("TIER", a->tier, "guaranteed, standard, spot or inference")->required();
  quote->add_option("--gpus", a->gpus, "GPUs")->capture_default_str();
  quote->add_option("--hours", a->hours, "hours")->capture_default_str();
  quote->add_option("--config", a->config, "market config (default data/market/default.yaml)");
  quote->callback([a] {
    SetExitCode(RunQuote({.config = a->config, .gpu_model = a->gpu_model, .tier = a->tier, .gpus = a->gpus,
                          .hours = a->hours, .json = a->json}));
  });

  CLI::App* check = m->add_subcommand("check", "verify every ledger invariant on the stored ledger");
  check->callback([a] { SetExitCode(Check(*a)); });
}

}  // namespace tidal::cli
