// How the ledger's records map to store rows (tables ledger_accounts,
// ledger_transfers, ledger_holds; schema in src/store/schema.cc). Internal to
// the ledger.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "market/ledger.h"
#include "store/store.h"

namespace tidal::market::rows {

Result<std::optional<Account>> LoadAccount(store::Tx& tx, std::string_view name);
Result<std::vector<Account>> LoadAccounts(store::Tx& tx);
Status InsertAccount(store::Tx& tx, const Account& a);
Status UpdateAccountBalances(store::Tx& tx, const Account& a);

Result<std::optional<TransferRecord>> LoadTransfer(store::Tx& tx, std::string_view id);
// Every transfer, accepted and rejected, in ledger order, read `page` rows
// at a time: a ledger of millions of transfers is never held whole.
Status ForEachTransfer(store::Tx& tx, const std::function<Status(const TransferRecord&)>& fn, std::int64_t page = 4096);
Result<std::vector<TransferRecord>> LoadAccountTransfers(store::Tx& tx, std::string_view account);
Status InsertTransfer(store::Tx& tx, const TransferRecord& r);
// The same for many, several rows to a statement.
Status InsertTransfers(store::Tx& tx, std::span<const TransferRecord> records);
Result<std::int64_t> MaxSeq(store::Tx& tx);
// Sum of accepted reversals of `id`.
Result<Micros> ReversedAmount(store::Tx& tx, std::string_view id);

Result<std::optional<Hold>> LoadHold(store::Tx& tx, std::string_view id);
Result<std::vector<Hold>> LoadHolds(store::Tx& tx, bool open_only);
Result<std::vector<std::string>> ExpiredHoldIds(store::Tx& tx, std::int64_t now_us);
Status UpsertHold(store::Tx& tx, const Hold& h);
// The same for many, several rows to a statement; ids must be distinct.
Status UpsertHolds(store::Tx& tx, std::span<const Hold* const> holds);

std::optional<HoldState> ParseHoldState(std::string_view s);
std::optional<AccountKind> ParseAccountKind(std::string_view s);

}  // namespace tidal::market::rows
