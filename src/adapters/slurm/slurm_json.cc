#include "adapters/slurm/slurm_json.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "topology/hostlist.h"

namespace tidal::slurm {
namespace {

using json = nlohmann::json;

struct Reader {
  std::string_view source;
  std::string where;  // "jobs[3]"

  Error Bad(std::string_view field, std::string_view what) const {
    return Error{ErrorCode::kParse, fmt::format("{}: {}.{}: {}", source, where, field, what)};
  }
  // A number, or v0.0.39's {"set": bool, "infinite": bool, "number": n};
  // absent, unset or infinite give `dflt`.
  Result<int64_t> Int(const json& o, std::string_view key, int64_t dflt = 0) const {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return dflt;
    const json* v = &*it;
    if (v->is_object()) {
      if (!v->value("set", true) || v->value("infinite", false)) return dflt;
      auto n = v->find("number");
      if (n == v->end()) return std::unexpected(Bad(key, "an object without 'number'"));
      v = &*n;
    }
    if (v->is_number_integer()) return v->get<int64_t>();
    if (v->is_number_float()) {
      const double d = v->get<double>();
      if (d != static_cast<double>(static_cast<int64_t>(d))) return std::unexpected(Bad(key, fmt::format("{} is not a whole number", d)));
      return static_cast<int64_t>(d);
    }
    return std::unexpected(Bad(key, fmt::format("expected a number, got {}", v->type_name())));
  }
  Result<std::string> Text(const json& o, std::string_view key) const {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return std::string();
    if (!it->is_string()) return std::unexpected(Bad(key, fmt::format("expected a string, got {}", it->type_name())));
    return it->get<std::string>();
  }
  // A string or a list of strings (v0.0.39+ states and flags).
  Result<std::vector<std::string>> Texts(const json& o, std::string_view key) const {
    auto it = o.find(key);
    std::vector<std::string> out;
    if (it == o.end() || it->is_null()) return out;
    if (it->is_string()) {
      out.push_back(it->get<std::string>());
      return out;
    }
    if (!it->is_array()) return std::unexpected(Bad(key, fmt::format("expected a string or a list, got {}", it->type_name())));
    for (const json& e : *it) {
      if (!e.is_string()) return std::unexpected(Bad(key, "a list element is not a string"));
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  Result<std::vector<std::string>> Hosts(const json& o, std::string_view key) const {
    TIDAL_ASSIGN_OR_RETURN(std::string list, Text(o, key));
    if (list.empty() || list == "(null)") return std::vector<std::string>{};
    auto hosts = topo::ExpandHostlist(list, 1'000'000);
    if (!hosts) return std::unexpected(Bad(key, hosts.error().message));
    return *hosts;
  }
};

Result<json> ParseTop(std::string_view text, std::string_view source, std::string_view list) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return MakeError(ErrorCode::kParse, "{}: not JSON; run the command by hand to see what it printed", source);
  }
  if (!doc.is_object()) return MakeError(ErrorCode::kParse, "{}: the top level is not an object", source);
  if (auto e = doc.find("errors"); e != doc.end() && e->is_array() && !e->empty()) {
    return MakeError(ErrorCode::kIo, "{}: Slurm reports an error: {}", source, e->front().dump());
  }
  auto l = doc.find(list);
  if (l == doc.end() || !l->is_array()) return MakeError(ErrorCode::kParse, "{}: no '{}' list", source, list);
  return std::move(*l);
}

}  // namespace

bool SlurmNode::drained() const {
  return std::any_of(state.begin(), state.end(), [](const std::string& s) { return s.starts_with("drain"); });
}

bool OutOfService(const SlurmNode& node) {
  return node.drained() || std::any_of(node.state.begin(), node.state.end(), [](const std::string& s) {
           return s == "down" || s == "fail" || s == "failing" || s == "not_responding";
         });
}

Result<std::vector<SlurmJob>> ParseSqueueJson(std::string_view text, std::string_view source) {
  TIDAL_ASSIGN_OR_RETURN(json jobs, ParseTop(text, source, "jobs"));
  std::vector<SlurmJob> out;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const json& o = jobs[i];
    Reader r{source, fmt::format("jobs[{}]", i)};
    if (!o.is_object()) return std::unexpected(r.Bad("", "not an object"));
    SlurmJob j;
    TIDAL_ASSIGN_OR_RETURN(j.id, r.Int(o, "job_id", -1));
    if (j.id <= 0) return std::unexpected(r.Bad("job_id", "missing or not positive"));
    r.where = fmt::format("jobs[{}] (job {})", i, j.id);
    TIDAL_ASSIGN_OR_RETURN(j.name, r.Text(o, "name"));
    TIDAL_ASSIGN_OR_RETURN(j.comment, r.Text(o, "comment"));
    TIDAL_ASSIGN_OR_RETURN(j.partition, r.Text(o, "partition"));
    TIDAL_ASSIGN_OR_RETURN(std::vector<std::string> state, r.Texts(o, "job_state"));
    if (state.empty()) return std::unexpected(r.Bad("job_state", "missing"));
    j.state = state.front();
    TIDAL_ASSIGN_OR_RETURN(j.reason, r.Text(o, "state_reason"));
    TIDAL_ASSIGN_OR_RETURN(j.nodes, r.Hosts(o, "nodes"));
    TIDAL_ASSIGN_OR_RETURN(j.required_nodes, r.Hosts(o, "required_nodes"));
    TIDAL_ASSIGN_OR_RETURN(j.submit_time, r.Int(o, "submit_time"));
    TIDAL_ASSIGN_OR_RETURN(j.start_time, r.Int(o, "start_time"));
    TIDAL_ASSIGN_OR_RETURN(j.end_time, r.Int(o, "end_time"));
    TIDAL_ASSIGN_OR_RETURN(j.priority, r.Int(o, "priority"));
    TIDAL_ASSIGN_OR_RETURN(int64_t nodes, r.Int(o, "node_count"));
    TIDAL_ASSIGN_OR_RETURN(int64_t restarts, r.Int(o, "restart_cnt"));
    if (nodes < 0 || nodes > 1'000'000) return std::unexpected(r.Bad("node_count", fmt::format("{} is out of range", nodes)));
    if (restarts < 0 || restarts > 1'000'000) return std::unexpected(r.Bad("restart_cnt", fmt::format("{} is out of range", restarts)));
    j.node_count = static_cast<int32_t>(nodes);
    j.restarts = static_cast<int32_t>(restarts);
    // exit_code: a number (v0.0.38) or {"status", "return_code"} later.
    if (auto e = o.find("exit_code"); e != o.end() && e->is_object() && e->contains("return_code")) {
      TIDAL_ASSIGN_OR_RETURN(int64_t rc, r.Int(*e, "return_code"));
      j.exit_code = static_cast<int32_t>(std::clamp<int64_t>(rc, -1, 255));
    } else {
      TIDAL_ASSIGN_OR_RETURN(int64_t rc, r.Int(o, "exit_code"));
      j.exit_code = static_cast<int32_t>(std::clamp<int64_t>(rc, -1, 1 << 16));
    }
    TIDAL_ASSIGN_OR_RETURN(j.tres_per_node, r.Text(o, "tres_per_node"));
    TIDAL_ASSIGN_OR_RETURN(j.account, r.Text(o, "account"));
    TIDAL_ASSIGN_OR_RETURN(j.user, r.Text(o, "user_name"));
    TIDAL_ASSIGN_OR_RETURN(j.time_limit_min, r.Int(o, "time_limit"));
    if (j.time_limit_min < 0 || j.time_limit_min > 1'000'000'000) {
      return std::unexpected(r.Bad("time_limit", fmt::format("{} is out of range", j.time_limit_min)));
    }
    out.push_back(std::move(j));
  }
  return out;
}

std::string GresOfTres(std::string_view tres) {
  std::string out;
  size_t pos = 0;
  while (pos <= tres.size()) {
    size_t comma = tres.find(',', pos);
    if (comma == std::string_view::npos) comma = tres.size();
    std::string item(tres.substr(pos, comma - pos));
    if (item.rfind("gres:", 0) == 0 || item.rfind("gres/", 0) == 0) item.erase(0, 5);
    std::replace(item.begin(), item.end(), '=', ':');
    if (!item.empty()) out += (out.empty() ? "" : ",") + item;
    pos = comma + 1;
  }
  return out;
}

Result<std::pair<int32_t, std::string>> ParseGpuGres(std::string_view gres) {
  int64_t total = 0;
  std::string type;
  bool mixed = false;
  if (gres.empty() || gres == "(null)") return std::pair<int32_t, std::string>{0, ""};
  size_t pos = 0;
  while (pos <= gres.size()) {
    size_t end = gres.find(',', pos);
    if (end == std::string_view::npos) end = gres.size();
    std::string_view item = gres.substr(pos, end - pos);
    pos = end + 1;
    if (auto paren = item.find('('); paren != std::string_view::npos) item = item.substr(0, paren);  // "(S:0-1)" socket binding
    std::vector<std::string_view> parts;
    for (size_t p = 0; p <= item.size();) {
      size_t q = item.find(':', p);
      if (q == std::string_view::npos) q = item.size();
      parts.push_back(item.substr(p, q - p));
      p = q + 1;
    }
    if (parts.empty() || parts[0] != "gpu") continue;  // another GRES (nic, mps, shard)
    if (parts.size() < 2 || parts.size() > 3) {
      return MakeError(ErrorCode::kParse, "GRES '{}': expected gpu:COUNT or gpu:TYPE:COUNT", item);
    }
    int64_t n = 0;
    const std::string_view count = parts.back();
    auto [ptr, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
    if (ec != std::errc() || ptr != count.data() + count.size() || n < 0 || n > 1'000'000) {
      return MakeError(ErrorCode::kParse, "GRES '{}': the count '{}' is not a whole number in [0, 1000000]", item, count);
    }
    total += n;
    const std::string t = parts.size() == 3 ? std::string(parts[1]) : "";
    if (n > 0) {
      if (!type.empty() && t != type) mixed = true;
      if (type.empty()) type = t;
    }
    if (end == gres.size()) break;
  }
  if (total > 1'000'000) return MakeError(ErrorCode::kParse, "GRES '{}': more than 1,000,000 GPUs on one node", gres);
  return std::pair<int32_t, std::string>{static_cast<int32_t>(total), mixed ? "" : type};
}

Result<std::vector<SlurmNode>> ParseSinfoJson(std::string_view text, std::string_view source) {
  TIDAL_ASSIGN_OR_RETURN(json nodes, ParseTop(text, source, "nodes"));
  std::vector<SlurmNode> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const json& o = nodes[i];
    Reader r{source, fmt::format("nodes[{}]", i)};
    if (!o.is_object()) return std::unexpected(r.Bad("", "not an object"));
    SlurmNode n;
    TIDAL_ASSIGN_OR_RETURN(n.name, r.Text(o, "name"));
    if (n.name.empty()) return std::unexpected(r.Bad("name", "missing or empty"));
    r.where = fmt::format("nodes[{}] ({})", i, n.name);
    // v0.0.38: "state" a string and "state_flags" a list; later "state" a list.
    TIDAL_ASSIGN_OR_RETURN(n.state, r.Texts(o, "state"));
    TIDAL_ASSIGN_OR_RETURN(std::vector<std::string> flags, r.Texts(o, "state_flags"));
    n.state.insert(n.state.end(), flags.begin(), flags.end());
    for (std::string& s : n.state)
      for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    TIDAL_ASSIGN_OR_RETURN(n.cpus, r.Int(o, "cpus"));
    TIDAL_ASSIGN_OR_RETURN(n.real_memory_mib, r.Int(o, "real_memory"));
    if (n.cpus < 0 || n.cpus > 1'000'000) return std::unexpected(r.Bad("cpus", fmt::format("{} is out of range", n.cpus)));
    if (n.real_memory_mib < 0 || n.real_memory_mib > (int64_t{1} << 40)) {
      return std::unexpected(r.Bad("real_memory", fmt::format("{} is out of range", n.real_memory_mib)));
    }
    TIDAL_ASSIGN_OR_RETURN(std::string gres, r.Text(o, "gres"));
    auto g = ParseGpuGres(gres);
    if (!g) return std::unexpected(r.Bad("gres", g.error().message));
    n.gpus = g->first;
    n.gpu_type = g->second;
    TIDAL_ASSIGN_OR_RETURN(n.partitions, r.Texts(o, "partitions"));
    TIDAL_ASSIGN_OR_RETURN(n.reason, r.Text(o, "reason"));
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace tidal::slurm
