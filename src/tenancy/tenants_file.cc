#include "tenancy/tenants_file.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/csv.h"

namespace tidal::tenancy {
namespace {

// "64", "0.5" (GPU, CPU: x1000), "4096Gi" (memory: MiB).
Result<int64_t> Quantity(const YAML::Node& n, const std::string& resource, const std::string& where) {
  const std::string text = n.as<std::string>();
  double scale = 1000;  // gpu, cpu: milli
  std::string number = text;
  if (resource == "memory") {
    scale = 1;
    static const std::pair<const char*, double> suffixes[] = {{"Ti", 1024.0 * 1024}, {"Gi", 1024}, {"Mi", 1}};
    for (const auto& [s, k] : suffixes) {
      const std::string_view sv(s);
      if (number.size() > sv.size() && number.ends_with(sv)) {
        number.resize(number.size() - sv.size());
        scale = k;
        break;
      }
    }
  }
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(number, &used);
  } catch (...) {
    used = 0;
  }
  const bool plain = number.find_first_of("xXpP") == std::string::npos;  // no hex floats
  if (used != number.size() || number.empty() || !std::isfinite(v) || !plain) {
    return MakeError(ErrorCode::kParse, "{}: '{}' is not a quantity for '{}' (write e.g. 64, 0.5{})", where, text,
                     resource, resource == "memory" ? ", 4096Gi" : "");
  }
  const double scaled = std::round(v * scale);
  if (v > 0 && scaled == 0) {
    return MakeError(ErrorCode::kParse, "{}: quantity '{}' for '{}' is below its unit ({}); it would be 0", where, text,
                     resource, resource == "memory" ? "1 MiB" : "0.001");
  }
  if (scaled < 0 || scaled >= std::ldexp(1.0, 50)) {
    return MakeError(ErrorCode::kParse, "{}: quantity '{}' for '{}' is negative or too large", where, text, resource);
  }
  return static_cast<int64_t>(scaled);
}

bool KnownResource(const std::string& r) {
  return r == "gpu" || r == "cpu" || r == "memory" || (r.starts_with("gpu/") && r.size() > 4);
}

// A scalar field, or an error naming the field, the tenant and the line.
Result<std::string> Scalar(const YAML::Node& n, const char* field, const std::string& tenant, const std::string& where) {
  if (!n.IsScalar() || n.Scalar().empty()) {
    return MakeError(ErrorCode::kParse, "{}: '{}' of tenant '{}' must be a single value{}", where, field,
                     tenant.empty() ? "?" : tenant, n.IsNull() ? " (it is empty)" : "");
  }
  return n.Scalar();
}

}  // namespace

Result<std::vector<TenantSpec>> ParseTenantsYaml(const std::string& text, const std::string& source) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: not valid YAML: {}", source, e.mark.line + 1, e.msg);
  }
  auto where = [&](const YAML::Node& n) { return fmt::format("{}:{}", source, n.Mark().line + 1); };
  std::vector<TenantSpec> out;
  try {
    if (!doc.IsMap() || !doc["version"] || doc["version"].as<std::string>() != "1") {
      return MakeError(ErrorCode::kParse, "{}:1: a tenants file starts with 'version: 1'", source);
    }
    for (const auto& kv : doc) {
      const std::string k = kv.first.as<std::string>();
      if (k != "version" && k != "tenants") {
        return MakeError(ErrorCode::kParse, "{}: unknown key '{}' (known: version, tenants)", where(kv.first), k);
      }
    }
    const YAML::Node list = doc["tenants"];
    if (!list || !list.IsSequence() || list.size() == 0) {
      return MakeError(ErrorCode::kParse, "{}: 'tenants:' must list the tenants, root first", source);
    }
    static const std::set<std::string> keys = {"name", "parent", "weight", "tier", "groups", "quota"};
    for (const YAML::Node& t : list) {
      if (!t.IsMap()) return MakeError(ErrorCode::kParse, "{}: each tenant is a map with name, parent, quota, ...", where(t));
      TenantSpec s;
      s.source = where(t);
      for (const auto& kv : t) {
        const std::string k = kv.first.as<std::string>();
        if (!keys.contains(k)) {
          return MakeError(ErrorCode::kParse, "{}: unknown tenant key '{}' (known: name, parent, weight, tier, groups, quota)",
                           where(kv.first), k);
        }
      }
      if (!t["name"] || !t["name"].IsScalar() || t["name"].Scalar().empty()) {
        return MakeError(ErrorCode::kParse, "{}: a tenant has no name; it needs 'name:' with a single value", where(t));
      }
      s.name = t["name"].Scalar();
      if (t["parent"]) {
        TIDAL_ASSIGN_OR_RETURN(s.parent, Scalar(t["parent"], "parent", s.name, where(t["parent"])));
      }
      if (t["weight"]) {
        TIDAL_ASSIGN_OR_RETURN(std::string w, Scalar(t["weight"], "weight", s.name, where(t["weight"])));
        size_t used = 0;
        try {
          s.weight = std::stod(w, &used);
        } catch (...) {
          used = 0;
        }
        if (used == 0 || used != w.size()) {
          return MakeError(ErrorCode::kParse, "{}: weight '{}' of tenant '{}' is not a number (write e.g. weight: 2)",
                           where(t["weight"]), w, s.name);
        }
      }
      if (t["tier"]) {
        TIDAL_ASSIGN_OR_RETURN(std::string tier_name, Scalar(t["tier"], "tier", s.name, where(t["tier"])));
        auto tier = ParseTier(tier_name);
        if (!tier) return MakeError(ErrorCode::kParse, "{}: {}", where(t["tier"]), tier.error().message);
        s.tier = *tier;
      }
      if (t["groups"]) {
        if (!t["groups"].IsSequence()) return MakeError(ErrorCode::kParse, "{}: 'groups:' is a list", where(t["groups"]));
        for (const auto& g : t["groups"]) s.groups.push_back(g.as<std::string>());
      }
      if (const YAML::Node q = t["quota"]) {
        if (!q.IsMap()) return MakeError(ErrorCode::kParse, "{}: 'quota:' maps resources to {{nominal: N, ...}}", where(q));
        for (const auto& kv : q) {
          const std::string r = kv.first.as<std::string>();
          if (!KnownResource(r)) {
            return MakeError(ErrorCode::kParse, "{}: unknown resource '{}' (known: gpu, gpu/<MODEL>, cpu, memory)",
                             where(kv.first), r);
          }
          const YAML::Node& v = kv.second;
          if (!v.IsMap() || !v["nominal"]) {
            return MakeError(ErrorCode::kParse, "{}: resource '{}' needs {{nominal: N}} (optionally borrowing_limit, lending_limit)",
                             where(v), r);
          }
          Quota quota;
          for (const auto& f : v) {
            const std::string fk = f.first.as<std::string>();
            if (fk != "nominal" && fk != "borrowing_limit" && fk != "lending_limit") {
              return MakeError(ErrorCode::kParse, "{}: unknown quota field '{}' (known: nominal, borrowing_limit, lending_limit)",
                               where(f.first), fk);
            }
            if (!f.second.IsScalar()) {
              return MakeError(ErrorCode::kParse, "{}: {} of '{}' (tenant '{}') must be a number, not a list or map",
                               where(f.second), fk, r, s.name);
            }
            TIDAL_ASSIGN_OR_RETURN(int64_t x, Quantity(f.second, r, where(f.second)));
            if (fk == "nominal") quota.nominal = x;
            if (fk == "borrowing_limit") quota.borrowing_limit = x;
            if (fk == "lending_limit") quota.lending_limit = x;
          }
          for (const auto& [name, _] : s.quotas)
            if (name == r) return MakeError(ErrorCode::kParse, "{}: resource '{}' is given twice", where(kv.first), r);
          s.quotas.emplace_back(r, quota);
        }
      }
      out.push_back(std::move(s));
    }
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: {}", source, e.mark.line + 1, e.msg);
  }
  return out;
}

Result<TenantTree> ReadTenantsFile(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  TIDAL_ASSIGN_OR_RETURN(std::vector<TenantSpec> specs, ParseTenantsYaml(text, path));
  return TenantTree::Build(std::move(specs));
}

Result<TenantTree> ProportionalTenants(std::vector<GroupUsage> groups, int64_t total_gpus) {
  if (total_gpus <= 0) return MakeError(ErrorCode::kInvalidArgument, "proportional tenants need a cluster with GPUs");
  std::sort(groups.begin(), groups.end(), [](const GroupUsage& a, const GroupUsage& b) { return a.group < b.group; });
  double sum = 0;
  for (const GroupUsage& g : groups) {
    if (g.group.empty()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "a job has no tenant (empty group column); --tenants proportional needs every job's tenant");
    }
    sum += std::max(0.0, g.gpu_seconds);
  }
  if (groups.empty() || sum <= 0) {
    return MakeError(ErrorCode::kInvalidArgument, "--tenants proportional: the trace asks for no GPU time per tenant");
  }
  // Largest remainder; at least one GPU per group that asked for some, when
  // there are more GPUs than such groups.
  const auto n = groups.size();
  std::vector<int64_t> floors(n, 0);
  std::vector<std::pair<double, size_t>> rem;
  int64_t given = 0;
  for (size_t i = 0; i < n; ++i) {
    const double exact = static_cast<double>(total_gpus) * std::max(0.0, groups[i].gpu_seconds) / sum;
    floors[i] = static_cast<int64_t>(std::floor(exact));
    given += floors[i];
    rem.push_back({exact - static_cast<double>(floors[i]), i});
  }
  std::sort(rem.begin(), rem.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  for (size_t k = 0; given < total_gpus; k = (k + 1) % n, ++given) ++floors[rem[k].second];
  const auto asking = std::count_if(groups.begin(), groups.end(), [](const GroupUsage& g) { return g.gpu_seconds > 0; });
  if (asking <= total_gpus) {
    for (size_t i = 0; i < n; ++i) {
      if (floors[i] > 0 || groups[i].gpu_seconds <= 0) continue;
      auto donor = std::max_element(floors.begin(), floors.end()) - floors.begin();
      --floors[static_cast<size_t>(donor)];
      floors[i] = 1;
    }
  }
  std::vector<TenantSpec> specs;
  specs.push_back({.name = "cluster", .source = "--tenants proportional"});
  specs.back().quotas.push_back({"gpu", Quota{}});
  for (size_t i = 0; i < n; ++i) {
    TenantSpec s{.name = groups[i].group, .parent = "cluster", .source = "--tenants proportional"};
    s.quotas.push_back({"gpu", Quota{.nominal = floors[i] * 1000}});
    specs.push_back(std::move(s));
  }
  return TenantTree::Build(std::move(specs));
}

Result<TenantTree> WithLeaves(const TenantTree& tree, std::vector<TenantSpec> leaves) {
  std::vector<TenantSpec> specs;
  for (TenantId t = 0; t < tree.size(); ++t) specs.push_back(tree.spec(t));
  for (TenantSpec& l : leaves) {
    if (l.parent.empty()) l.parent = tree.spec(tree.root()).name;
    specs.push_back(std::move(l));
  }
  return TenantTree::Build(std::move(specs));
}

Result<TenantTree> WithTier(const TenantTree& tree, const std::string& tenant, Tier tier) {
  const TenantId id = tree.Find(tenant);
  if (id == kNoTenant) return MakeError(ErrorCode::kNotFound, "no tenant '{}' to make {}", tenant, TierName(tier));
  std::vector<TenantSpec> specs;
  for (TenantId t = 0; t < tree.size(); ++t) {
    specs.push_back(tree.spec(t));
    if (t == id) specs.back().tier = tier;
  }
  return TenantTree::Build(std::move(specs));
}

Result<TenantTree> WithoutBorrowing(const TenantTree& tree) {
  std::vector<TenantSpec> specs;
  for (TenantId t = 0; t < tree.size(); ++t) {
    TenantSpec s = tree.spec(t);
    if (tree.is_leaf(t)) {
      for (ResourceId r = 0; r < tree.num_resources(); ++r) {
        auto it = std::find_if(s.quotas.begin(), s.quotas.end(), [&](const auto& q) { return q.first == tree.resource_name(r); });
        if (it == s.quotas.end()) {
          s.quotas.push_back({tree.resource_name(r), Quota{}});
          it = std::prev(s.quotas.end());
        }
        it->second.borrowing_limit = 0;
      }
    }
    specs.push_back(std::move(s));
  }
  return TenantTree::Build(std::move(specs));
}

}  // namespace tidal::tenancy
