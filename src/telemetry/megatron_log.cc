#include "telemetry/megatron_log.h"

#include <cctype>
#include <charconv>
#include <regex>

#include "common/csv.h"
#include "common/strings.h"

namespace tidal::telemetry {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<double> ParseDoubleOpt(std::string_view s) {
  s = Trim(s);
  if (s.empty()) return std::nullopt;
  // std::from_chars for double does not accept a leading '+'.
  if (s.front() == '+') s.remove_prefix(1);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (true) {
    size_t e = s.find(sep, pos);
    out.push_back(s.substr(pos, e == std::string_view::npos ? std::string_view::npos : e - pos));
    if (e == std::string_view::npos) break;
    pos = e + 1;
  }
  return out;
}

// A field of an iteration line: "name: value" (or 2019 "name value").
struct Field {
  std::string name;  // lower case
  std::string_view value;
};

Field SplitField(std::string_view f) {
  f = Trim(f);
  const size_t colon = f.rfind(": ");
  if (colon != std::string_view::npos) return {AsciiLower(Trim(f.substr(0, colon))), Trim(f.substr(colon + 2))};
  if (!f.empty() && f.back() == ':') return {AsciiLower(Trim(f.substr(0, f.size() - 1))), {}};
  const size_t sp = f.rfind(' ');
  if (sp != std::string_view::npos) return {AsciiLower(Trim(f.substr(0, sp))), Trim(f.substr(sp + 1))};
  return {AsciiLower(f), {}};
}

// Digits matched by a regex can still overflow; such a line is noise, not a crash.
std::optional<long> ToLong(const std::string& s) {
  long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// std::regex recurses per character; lines longer than this (binary noise,
// minified dumps) are skipped rather than risking the stack.
constexpr size_t kMaxLine = 8192;

}  // namespace

std::optional<long> MegatronLog::ArgInt(const std::string& name) const {
  auto it = arguments.find(name);
  if (it == arguments.end()) return std::nullopt;
  long v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size()) return std::nullopt;
  return v;
}

std::optional<double> MegatronLog::ArgDouble(const std::string& name) const {
  auto it = arguments.find(name);
  if (it == arguments.end()) return std::nullopt;
  return ParseDoubleOpt(it->second);
}

std::optional<bool> MegatronLog::ArgBool(const std::string& name) const {
  auto it = arguments.find(name);
  if (it == arguments.end()) return std::nullopt;
  if (it->second == "True") return true;
  if (it->second == "False" || it->second == "None") return false;
  return std::nullopt;
}

Result<MegatronLog> ParseMegatronLog(std::string_view text, const std::string& source) {
  MegatronLog log;
  log.source = source;
  static const std::regex kArg(R"(^\s+([a-z_][a-z0-9_]*) \.{3,} (.*)$)");
  static const std::regex kIter(R"(iteration\s+(\d+)\s*/\s*(\d+))");
  static const std::regex kNemo1(R"((\d+)/(\d+) \[[^\]]*?([0-9.]+)s/it)");
  static const std::regex kWorld(R"(([a-z\-]+(?: [a-z\-]+)*) size: (\d+))");
  static const std::regex kDsSamples(R"(\] (\d+)/(\d+), SamplesPerSec=([0-9.eE+\-]+))");
  int line_no = 0;
  for (std::string_view raw : Split(text, '\n')) {
    ++line_no;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    if (raw.size() > kMaxLine) continue;
    const std::string line(raw);
    auto bad = [&](std::string_view field, std::string_view value) {
      return MakeError(ErrorCode::kParse, "{}:{}: field '{}': '{}' is not a number", source, line_no, field, value);
    };
    std::smatch m;
    if (std::regex_match(line, m, kArg)) {
      log.arguments[m[1].str()] = std::string(Trim(m[2].str()));
      continue;
    }
    if (line.find("using world size:") != std::string::npos) {
      for (auto it = std::sregex_iterator(line.begin(), line.end(), kWorld); it != std::sregex_iterator(); ++it) {
        const std::string key = (*it)[1].str();
        const auto parsed = ToLong((*it)[2].str());
        if (!parsed || *parsed > 1'000'000'000) continue;
        const int v = static_cast<int>(*parsed);
        // "hierarchical context-parallel sizes: Nonetensor-model-parallel size"
        // glues two keys together in real logs: match on the suffix.
        auto ends = [&](std::string_view k) { return key.size() >= k.size() && key.ends_with(k); };
        if (ends("world")) log.world_size = v;
        else if (ends("encoder-tensor-model-parallel") || ends("encoder-pipeline-model-parallel")) continue;
        else if (ends("data-parallel")) log.data_parallel = v;
        else if (ends("tensor-model-parallel")) log.tensor_parallel = v;
        else if (ends("pipeline-model-parallel")) log.pipeline_parallel = v;
        else if (ends("context-parallel")) log.context_parallel = v;
      }
      continue;
    }
    if (const size_t t = line.find("time (ms) |"); t != std::string::npos) {
      TimerRecord tr;
      tr.line = line_no;
      auto parts = Split(std::string_view(line).substr(t + 11), '|');
      for (auto p : parts) {
        if (Trim(p).empty()) continue;
        Field f = SplitField(p);
        auto v = ParseDoubleOpt(f.value);
        if (!v) return bad(f.name, f.value);
        tr.ms[f.name] = *v;
      }
      log.timers.push_back(std::move(tr));
      continue;
    }
    IterationRecord rec;
    rec.line = line_no;
    if (std::regex_search(line, m, kDsSamples)) {
      auto iter = ToLong(m[1].str() == "0" ? m[2].str() : m[1].str());
      if (!iter) return bad("step", m[1].str());
      rec.iteration = *iter;
      rec.samples_per_s = ParseDoubleOpt(m[3].str());
      log.iterations.push_back(rec);
      continue;
    }
    const size_t it_pos = line.find("iteration");
    if (it_pos != std::string::npos && std::regex_search(line, m, kIter) && line.find('|') != std::string::npos) {
      auto iter = ToLong(m[1].str());
      if (!iter) return bad("iteration", m[1].str());
      rec.iteration = *iter;
      auto fields = Split(std::string_view(line).substr(it_pos), '|');
      for (size_t i = 1; i < fields.size(); ++i) {
        if (Trim(fields[i]).empty()) continue;
        Field f = SplitField(fields[i]);
        auto num = [&]() -> Result<double> {
          // "TFLOPs: 47.23" and "tokens per gpu per second(tgs): 775.250"
          auto v = ParseDoubleOpt(f.value);
          if (!v) return bad(f.name, f.value);
          return *v;
        };
        if (f.name == "elapsed time per iteration (ms)") {
          TIDAL_ASSIGN_OR_RETURN(double v, num());
          rec.elapsed_s = v / 1000.0;
        } else if (f.name == "elapsed time per iteration (s)" || f.name == "train_step_timing in s") {
          TIDAL_ASSIGN_OR_RETURN(double v, num());
          rec.elapsed_s = v;
        } else if (f.name == "throughput per gpu (tflop/s/gpu)" || f.name == "tflops") {
          TIDAL_ASSIGN_OR_RETURN(double v, num());
          rec.tflops_per_gpu = v;
        } else if (f.name == "global batch size" || f.name == "global_batch_size") {
          TIDAL_ASSIGN_OR_RETURN(double v, num());
          rec.global_batch = static_cast<long>(v);
        } else if (f.name == "samples per second") {
          TIDAL_ASSIGN_OR_RETURN(double v, num());
          rec.samples_per_s = v;
        } else if (f.name == "tokens per gpu per second(tgs)") {
          TIDAL_ASSIGN_OR_RETURN(double v, num());
          rec.tokens_per_gpu_per_s = v;
        }
      }
      log.iterations.push_back(rec);
      continue;
    }
    if (std::regex_search(line, m, kNemo1)) {
      auto iter = ToLong(m[1].str());
      if (!iter) return bad("iteration", m[1].str());
      rec.iteration = *iter;
      rec.elapsed_s = ParseDoubleOpt(m[3].str());
      log.iterations.push_back(rec);
    }
  }
  return log;
}

Result<MegatronLog> ReadMegatronLog(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseMegatronLog(text, path);
}

}  // namespace tidal::telemetry
