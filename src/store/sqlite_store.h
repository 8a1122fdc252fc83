// The SQLite backend (default): one file in WAL mode, one connection per Store.
#pragma once

#include <memory>

#include "common/result.h"
#include "store/store.h"
#include "store/url.h"

namespace tidal::store {

Result<std::unique_ptr<Store>> OpenSqliteStore(const StoreUrl& url, const OpenOptions& options);

}  // namespace tidal::store
