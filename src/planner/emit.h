// Launch configuration for a plan: Megatron-LM command-line arguments and a
// DeepSpeed JSON config. Only real flag and key names are emitted (tests check
// them against shared/fixtures/megatron-args and deepspeed-config).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/cost_model.h"

namespace tidal::planner {

// Flags and values as separate tokens, in a stable order.
std::vector<std::string> MegatronArgs(const ModelSpec& m, const Strategy& s);
// One shell-ready line: "--flag value --switch ...".
std::string MegatronArgsLine(const ModelSpec& m, const Strategy& s);

// A DeepSpeed config for the same plan. DeepSpeed has no context or expert
// parallel keys in its JSON (those are Megatron-DeepSpeed launcher flags), so
// the config carries batch sizes, precision, ZeRO and activation checkpointing.
nlohmann::json DeepSpeedConfig(const ModelSpec& m, const Strategy& s);

// Every key path in a JSON object, dotted ("zero_optimization.stage").
std::vector<std::string> JsonKeyPaths(const nlohmann::json& j);

}  // namespace tidal::planner
