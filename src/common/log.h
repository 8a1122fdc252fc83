// Logging facade: one stderr logger with levels, so libraries report what they
// do without printing directly and the binary decides what is shown
// (`tidal --log-level debug ...`). Results go to stdout or files, never here.
#pragma once

#include <string_view>

#include <spdlog/spdlog.h>

#include "common/result.h"

namespace tidal::log {

// The process-wide logger ("tidal", stderr). Created on first use at level warn.
spdlog::logger& Get();

// Sets the level by name: trace, debug, info, warn, error, critical, off.
Status SetLevel(std::string_view name);

template <typename... Args>
void Debug(spdlog::format_string_t<Args...> f, Args&&... args) { Get().debug(f, std::forward<Args>(args)...); }
template <typename... Args>
void Info(spdlog::format_string_t<Args...> f, Args&&... args) { Get().info(f, std::forward<Args>(args)...); }
template <typename... Args>
void Warn(spdlog::format_string_t<Args...> f, Args&&... args) { Get().warn(f, std::forward<Args>(args)...); }

}  // namespace tidal::log
