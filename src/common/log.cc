#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace tidal::log {

spdlog::logger& Get() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_st("tidal");
    l->set_pattern("tidal: %l: %v");
    l->set_level(spdlog::level::warn);
    return l;
  }();
  return *logger;
}

Status SetLevel(std::string_view name) {
  const auto level = spdlog::level::from_str(std::string(name));
  // from_str maps unknown names to "off"; only accept "off" when asked for.
  if (level == spdlog::level::off && name != "off") {
    return MakeError(ErrorCode::kInvalidArgument,
                     "--log-level '{}': use trace, debug, info, warn, error, critical or off", name);
  }
  Get().set_level(level);
  return Ok();
}

}  // namespace tidal::log
