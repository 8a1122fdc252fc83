// The PostgreSQL backend (libpqxx 6.x): one connection per Store.
#pragma once

#include <memory>

#include "common/result.h"
#include "store/store.h"
#include "store/url.h"

namespace tidal::store {

Result<std::unique_ptr<Store>> OpenPostgresStore(const StoreUrl& url, const OpenOptions& options);

// '?' placeholders to $1, $2, ...: a '?' inside a quoted literal or identifier
// ('...', "...", $tag$...$tag$) or a comment stays as it is. *count receives
// the number of placeholders.
std::string RewritePlaceholders(std::string_view sql, int* count);

}  // namespace tidal::store
