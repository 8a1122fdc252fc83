#include "market/ledger_rows.h"

#include <algorithm>
#include <array>
#include <limits>

namespace tidal::market::rows {
namespace {

using store::Value;

Error Corrupt(std::string_view what, std::string_view detail) {
  return Error{ErrorCode::kInternal,
               fmt::format("ledger store holds a malformed {} ({}); run `tidal market check` "
                           "and restore the store from a backup if it reports violations",
                           what, detail)};
}

constexpr std::string_view kAccountColumns =
    "name, kind, flags, debits_pending, debits_posted, credits_pending, credits_posted, created_seq";
constexpr std::string_view kTransferColumns =
    "seq, id, debit, credit, amount, flags, pending_id, timeout_s, code, reference, reason, at_us, "
    "result";
constexpr std::string_view kHoldColumns = "id, debit, credit, amount, remaining, state, expires_us";

Result<Account> AccountFrom(const store::Row& row) {
  Account a;
  TIDAL_ASSIGN_OR_RETURN(a.name, store::AsText(row, 0));
  TIDAL_ASSIGN_OR_RETURN(std::string kind, store::AsText(row, 1));
  const auto k = ParseAccountKind(kind);
  if (!k) return std::unexpected(Corrupt("account", fmt::format("{}: kind '{}'", a.name, kind)));
  a.kind = *k;
  TIDAL_ASSIGN_OR_RETURN(std::int64_t flags, store::AsInt(row, 2));
  a.flags = static_cast<std::uint32_t>(flags);
  TIDAL_ASSIGN_OR_RETURN(a.debits_pending, store::AsInt(row, 3));
  TIDAL_ASSIGN_OR_RETURN(a.debits_posted, store::AsInt(row, 4));
  TIDAL_ASSIGN_OR_RETURN(a.credits_pending, store::AsInt(row, 5));
  TIDAL_ASSIGN_OR_RETURN(a.credits_posted, store::AsInt(row, 6));
  TIDAL_ASSIGN_OR_RETURN(a.created_seq, store::AsInt(row, 7));
  return a;
}

Result<TransferRecord> TransferFrom(const store::Row& row) {
  TransferRecord r;
  Transfer& t = r.transfer;
  TIDAL_ASSIGN_OR_RETURN(r.seq, store::AsInt(row, 0));
  TIDAL_ASSIGN_OR_RETURN(t.id, store::AsText(row, 1));
  TIDAL_ASSIGN_OR_RETURN(t.debit, store::AsText(row, 2));
  TIDAL_ASSIGN_OR_RETURN(t.credit, store::AsText(row, 3));
  TIDAL_ASSIGN_OR_RETURN(t.amount, store::AsInt(row, 4));
  TIDAL_ASSIGN_OR_RETURN(std::int64_t flags, store::AsInt(row, 5));
  t.flags = static_cast<std::uint32_t>(flags);
  TIDAL_ASSIGN_OR_RETURN(t.pending_id, store::AsText(row, 6));
  TIDAL_ASSIGN_OR_RETURN(t.timeout_s, store::AsInt(row, 7));
  TIDAL_ASSIGN_OR_RETURN(t.code, store::AsText(row, 8));
  TIDAL_ASSIGN_OR_RETURN(t.reference, store::AsText(row, 9));
  TIDAL_ASSIGN_OR_RETURN(t.reason, store::AsText(row, 10));
  TIDAL_ASSIGN_OR_RETURN(t.at_us, store::AsInt(row, 11));
  TIDAL_ASSIGN_OR_RETURN(std::string result, store::AsText(row, 12));
  const auto parsed = ParseTransferResult(result, &r.result_field);
  if (!parsed) return std::unexpected(Corrupt("transfer", fmt::format("{}: result '{}'", t.id, result)));
  r.result = *parsed;
  return r;
}

Result<Hold> HoldFrom(const store::Row& row) {
  Hold h;
  TIDAL_ASSIGN_OR_RETURN(h.id, store::AsText(row, 0));
  TIDAL_ASSIGN_OR_RETURN(h.debit, store::AsText(row, 1));
  TIDAL_ASSIGN_OR_RETURN(h.credit, store::AsText(row, 2));
  TIDAL_ASSIGN_OR_RETURN(h.amount, store::AsInt(row, 3));
  TIDAL_ASSIGN_OR_RETURN(h.remaining, store::AsInt(row, 4));
  TIDAL_ASSIGN_OR_RETURN(std::string state, store::AsText(row, 5));
  const auto s = ParseHoldState(state);
  if (!s) return std::unexpected(Corrupt("hold", fmt::format("{}: state '{}'", h.id, state)));
  h.state = *s;
  TIDAL_ASSIGN_OR_RETURN(h.expires_us, store::AsInt(row, 6));
  return h;
}

template <typename T, typename F>
Result<std::vector<T>> All(const store::Rows& rs, F from) {
  std::vector<T> out;
  out.reserve(rs.rows.size());
  for (const auto& row : rs.rows) {
    TIDAL_ASSIGN_OR_RETURN(T v, from(row));
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace

std::optional<HoldState> ParseHoldState(std::string_view s) {
  for (HoldState h : {HoldState::kPending, HoldState::kPosted, HoldState::kVoided, HoldState::kExpired})
    if (s == HoldStateName(h)) return h;
  return std::nullopt;
}

std::optional<AccountKind> ParseAccountKind(std::string_view s) {
  for (AccountKind k : {AccountKind::kTenant, AccountKind::kSystem})
    if (s == AccountKindName(k)) return k;
  return std::nullopt;
}

Result<std::optional<Account>> LoadAccount(store::Tx& tx, std::string_view name) {
  const std::array<Value, 1> p{std::string(name)};
  TIDAL_ASSIGN_OR_RETURN(
      store::Rows rs,
      tx.Query(fmt::format("SELECT {} FROM ledger_accounts WHERE name = ?", kAccountColumns), p));
  if (rs.rows.empty()) return std::optional<Account>{};
  TIDAL_ASSIGN_OR_RETURN(Account a, AccountFrom(rs.rows.front()));
  return std::optional<Account>(std::move(a));
}

Result<std::vector<Account>> LoadAccounts(store::Tx& tx) {
  TIDAL_ASSIGN_OR_RETURN(
      store::Rows rs,
      tx.Query(fmt::format("SELECT {} FROM ledger_accounts ORDER BY created_seq, name", kAccountColumns)));
  return All<Account>(rs, AccountFrom);
}

Status InsertAccount(store::Tx& tx, const Account& a) {
  const std::array<Value, 8> p{a.name,           std::string(AccountKindName(a.kind)),
                               std::int64_t{a.flags}, a.debits_pending,
                               a.debits_posted,  a.credits_pending,
                               a.credits_posted, a.created_seq};
  TIDAL_RETURN_IF_ERROR(tx.Exec(
      fmt::format("INSERT INTO ledger_accounts ({}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", kAccountColumns), p));
  return Ok();
}

Status UpdateAccountBalances(store::Tx& tx, const Account& a) {
  const std::array<Value, 5> p{a.debits_pending, a.debits_posted, a.credits_pending, a.credits_posted,
                               a.name};
  TIDAL_ASSIGN_OR_RETURN(
      std::int64_t n,
      tx.Exec("UPDATE ledger_accounts SET debits_pending = ?, debits_posted = ?, credits_pending = ?, "
              "credits_posted = ? WHERE name = ?",
              p));
  if (n != 1) return std::unexpected(Corrupt("account", fmt::format("{} vanished during a write", a.name)));
  return Ok();
}

Result<std::optional<TransferRecord>> LoadTransfer(store::Tx& tx, std::string_view id) {
  const std::array<Value, 1> p{std::string(id)};
  TIDAL_ASSIGN_OR_RETURN(
      store::Rows rs,
      tx.Query(fmt::format("SELECT {} FROM ledger_transfers WHERE id = ?", kTransferColumns), p));
  if (rs.rows.empty()) return std::optional<TransferRecord>{};
  TIDAL_ASSIGN_OR_RETURN(TransferRecord r, TransferFrom(rs.rows.front()));
  return std::optional<TransferRecord>(std::move(r));
}

Status ForEachTransfer(store::Tx& tx, const std::function<Status(const TransferRecord&)>& fn, std::int64_t page) {
  const std::string sql =
      fmt::format("SELECT {} FROM ledger_transfers WHERE seq > ? ORDER BY seq LIMIT ?", kTransferColumns);
  std::int64_t after = std::numeric_limits<std::int64_t>::min();
  for (;;) {
    const std::array<Value, 2> p{after, std::max<std::int64_t>(1, page)};
    std::int64_t n = 0;
    TIDAL_RETURN_IF_ERROR(tx.QueryEach(sql, p, [&](const store::Row& row) -> Status {
      TIDAL_ASSIGN_OR_RETURN(TransferRecord r, TransferFrom(row));
      after = r.seq;
      ++n;
      return fn(r);
    }));
    if (n < std::max<std::int64_t>(1, page)) return Ok();
  }
}

Result<std::vector<TransferRecord>> LoadAccountTransfers(store::Tx& tx, std::string_view account) {
  const std::array<Value, 2> p{std::string(account), std::string(account)};
  TIDAL_ASSIGN_OR_RETURN(
      store::Rows rs,
      tx.Query(fmt::format("SELECT {} FROM ledger_transfers WHERE (debit = ? OR credit = ?) AND "
                           "result = 'ok' ORDER BY seq",
                           kTransferColumns),
               p));
  return All<TransferRecord>(rs, TransferFrom);
}

namespace {

// `head` VALUES (?, ...), (?, ...) ... `tail`: `rows` rows of `cols` values.
std::string RowsSql(std::string_view head, std::size_t cols, std::size_t rows, std::string_view tail) {
  std::string row = "(";
  for (std::size_t c = 0; c < cols; ++c) row += c == 0 ? "?" : ", ?";
  row += ")";
  std::string s = fmt::format("{} VALUES ", head);
  for (std::size_t r = 0; r < rows; ++r) s += (r == 0 ? "" : ", ") + row;
  return s + std::string(tail);
}

constexpr std::size_t kRowsPerStatement = 32;  // 416 parameters at most: under SQLite's old limit of 999

// Executes `many` (kRowsPerStatement rows) for whole chunks of `items` and
// `one` for the rest; add(item, params) appends one row's values.
template <class T, class Add>
Status ExecRows(store::Tx& tx, const std::string& many, const std::string& one, std::span<const T> items, Add add) {
  std::vector<Value> p;
  std::size_t i = 0;
  for (; i + kRowsPerStatement <= items.size(); i += kRowsPerStatement) {
    p.clear();
    for (const T& x : items.subspan(i, kRowsPerStatement)) add(x, p);
    TIDAL_RETURN_IF_ERROR(tx.Exec(many, p));
  }
  for (; i < items.size(); ++i) {
    p.clear();
    add(items[i], p);
    TIDAL_RETURN_IF_ERROR(tx.Exec(one, p));
  }
  return Ok();
}

}  // namespace

Status InsertTransfers(store::Tx& tx, std::span<const TransferRecord> records) {
  static const std::string head = fmt::format("INSERT INTO ledger_transfers ({})", kTransferColumns);
  static const std::string many = RowsSql(head, 13, kRowsPerStatement, "");
  static const std::string one = RowsSql(head, 13, 1, "");
  return ExecRows(tx, many, one, records, [](const TransferRecord& r, std::vector<Value>& p) {
    const Transfer& t = r.transfer;
    p.insert(p.end(), {r.seq, t.id, t.debit, t.credit, t.amount, std::int64_t{t.flags}, t.pending_id, t.timeout_s,
                       t.code, t.reference, t.reason, t.at_us, TransferResultName(r.result, r.result_field)});
  });
}

Status InsertTransfer(store::Tx& tx, const TransferRecord& r) { return InsertTransfers(tx, std::span(&r, 1)); }

Result<std::int64_t> MaxSeq(store::Tx& tx) {
  TIDAL_ASSIGN_OR_RETURN(store::Rows rs, tx.Query("SELECT MAX(seq) FROM ledger_transfers"));
  if (rs.rows.empty() || store::IsNull(rs.rows.front(), 0)) return std::int64_t{0};
  return store::AsInt(rs.rows.front(), 0);
}

Result<Micros> ReversedAmount(store::Tx& tx, std::string_view id) {
  const std::array<Value, 2> p{std::string(kCodeReversal), std::string(id)};
  TIDAL_ASSIGN_OR_RETURN(
      store::Rows rs,
      tx.Query("SELECT amount FROM ledger_transfers WHERE code = ? AND reference = ? AND result = 'ok'", p));
  Micros sum = 0;
  for (const auto& row : rs.rows) {
    TIDAL_ASSIGN_OR_RETURN(Micros a, store::AsInt(row, 0));
    sum += a;
  }
  return sum;
}

Result<std::optional<Hold>> LoadHold(store::Tx& tx, std::string_view id) {
  const std::array<Value, 1> p{std::string(id)};
  TIDAL_ASSIGN_OR_RETURN(store::Rows rs,
                         tx.Query(fmt::format("SELECT {} FROM ledger_holds WHERE id = ?", kHoldColumns), p));
  if (rs.rows.empty()) return std::optional<Hold>{};
  TIDAL_ASSIGN_OR_RETURN(Hold h, HoldFrom(rs.rows.front()));
  return std::optional<Hold>(std::move(h));
}

Result<std::vector<Hold>> LoadHolds(store::Tx& tx, bool open_only) {
  TIDAL_ASSIGN_OR_RETURN(
      store::Rows rs,
      tx.Query(fmt::format("SELECT {} FROM ledger_holds{} ORDER BY id", kHoldColumns,
                           open_only ? " WHERE state = 'pending'" : "")));
  return All<Hold>(rs, HoldFrom);
}

Result<std::vector<std::string>> ExpiredHoldIds(store::Tx& tx, std::int64_t now_us) {
  const std::array<Value, 1> p{now_us};
  TIDAL_ASSIGN_OR_RETURN(store::Rows rs,
                         tx.Query("SELECT id FROM ledger_holds WHERE state = 'pending' AND expires_us > 0 "
                                  "AND expires_us <= ? ORDER BY expires_us, id",
                                  p));
  std::vector<std::string> ids;
  for (const auto& row : rs.rows) {
    TIDAL_ASSIGN_OR_RETURN(std::string id, store::AsText(row, 0));
    ids.push_back(std::move(id));
  }
  return ids;
}

Status UpsertHolds(store::Tx& tx, std::span<const Hold* const> holds) {
  static const std::string head = fmt::format("INSERT INTO ledger_holds ({})", kHoldColumns);
  constexpr std::string_view kTail = " ON CONFLICT (id) DO UPDATE SET remaining = excluded.remaining, state = excluded.state";
  static const std::string many = RowsSql(head, 7, kRowsPerStatement, kTail);
  static const std::string one = RowsSql(head, 7, 1, kTail);
  return ExecRows(tx, many, one, holds, [](const Hold* h, std::vector<Value>& p) {
    p.insert(p.end(), {h->id, h->debit, h->credit, h->amount, h->remaining, std::string(HoldStateName(h->state)),
                       h->expires_us});
  });
}

Status UpsertHold(store::Tx& tx, const Hold& h) {
  const Hold* one = &h;
  return UpsertHolds(tx, std::span(&one, 1));
}

}  // namespace tidal::market::rows
