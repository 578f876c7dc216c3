#include "server/prometheus.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace pagoda::testing {

double PromMetrics::at(const std::string& key) const {
  auto it = samples.find(key);
  if (it == samples.end()) throw std::runtime_error("no metric sample " + key);
  return it->second;
}

namespace {

// A metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or label name (no ':') from s[i]; its end, or i if none.
size_t name_end(const std::string& s, size_t i, bool label) {
  auto start = [&](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (!label && c == ':'); };
  auto rest = [&](char c) { return start(c) || std::isdigit(static_cast<unsigned char>(c)); };
  if (i >= s.size() || !start(s[i])) return i;
  size_t j = i + 1;
  while (j < s.size() && rest(s[j])) ++j;
  return j;
}

bool parse_value(const std::string& v, double& out) {
  if (v == "+Inf")
    out = INFINITY;
  else if (v == "-Inf")
    out = -INFINITY;
  else if (v == "NaN")
    out = NAN;
  else {
    size_t used = 0;
    try {
      out = std::stod(v, &used);
    } catch (const std::exception&) {
      return false;
    }
    return used == v.size();
  }
  return true;
}

std::string family_of(const std::string& name, const std::map<std::string, std::string>& types) {
  if (types.count(name)) return name;
  for (const std::string suffix : {"_bucket", "_sum", "_count"}) {
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    auto it = types.find(name.substr(0, name.size() - suffix.size()));
    if (it != types.end() && (it->second == "histogram" || it->second == "summary")) return it->first;
  }
  return "";
}

}  // namespace

PromMetrics parse_prometheus(const std::string& text) {
  PromMetrics m;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    auto bad = [&](const std::string& why) {
      throw std::runtime_error("metrics line " + std::to_string(n) + ": " + why + ": '" + line + "'");
    };
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream words(line);
      std::string hash, kind, name, type, extra;
      words >> hash >> kind >> name;
      if (hash != "#" || (kind != "HELP" && kind != "TYPE")) bad("a comment that is neither HELP nor TYPE");
      if (name.empty() || name_end(name, 0, false) != name.size()) bad("a bad metric name");
      if (kind == "TYPE") {
        words >> type;
        if (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" && type != "untyped")
          bad("an unknown type");
        if (words >> extra) bad("trailing words");
        if (!m.types.emplace(name, type).second) bad("a second TYPE for the family");
      }
      continue;
    }
    // name{label="value",...} value
    size_t i = name_end(line, 0, false);
    if (i == 0) bad("not a sample");
    const std::string name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const size_t e = name_end(line, i, true);
        if (e == i || e + 1 >= line.size() || line[e] != '=' || line[e + 1] != '"') bad("a bad label");
        i = e + 2;
        while (i < line.size() && line[i] != '"') i += line[i] == '\\' ? 2 : 1;
        if (i >= line.size()) bad("an unterminated label value");
        ++i;
        if (i < line.size() && line[i] == ',')
          ++i;
        else if (i < line.size() && line[i] != '}')
          bad("a bad label list");
      }
      if (i >= line.size()) bad("an unterminated label list");
      ++i;
    }
    const std::string key = line.substr(0, i);
    if (i >= line.size() || line[i] != ' ') bad("no value");
    std::string value = line.substr(i + 1);
    if (const size_t sp = value.find(' '); sp != std::string::npos)
      value = value.substr(0, sp);  // a timestamp may follow
    double v;
    if (!parse_value(value, v)) bad("a value that is not a number");
    if (family_of(name, m.types).empty()) bad("a sample of no declared family");
    if (!m.samples.emplace(key, v).second) bad("a duplicate sample");
  }
  // Histograms: per label set (le aside), cumulative buckets ending with
  // +Inf == _count, and a _sum.
  for (const auto& [family, type] : m.types) {
    if (type != "histogram") continue;
    const std::string prefix = family + "_bucket{";
    std::map<std::string, std::vector<std::pair<double, double>>> series;  // labels without le -> buckets
    for (const auto& [key, value] : m.samples) {
      if (key.rfind(prefix, 0) != 0) continue;
      const std::string labels = key.substr(prefix.size(), key.size() - prefix.size() - 1);
      size_t at = std::string::npos;
      if (labels.starts_with("le=\""))
        at = 0;
      else if (const size_t comma = labels.find(",le=\""); comma != std::string::npos)
        at = comma + 1;
      const size_t close = at == std::string::npos ? at : labels.find('"', at + 4);
      double bound;
      if (at == std::string::npos || close == std::string::npos ||
          !parse_value(labels.substr(at + 4, close - at - 4), bound))
        throw std::runtime_error("a histogram bucket without a numeric le: " + key);
      std::string rest = labels.substr(0, at) + labels.substr(close + 1);
      if (rest.starts_with(",")) rest.erase(0, 1);
      if (rest.ends_with(",")) rest.pop_back();
      if (const size_t dup = rest.find(",,"); dup != std::string::npos) rest.erase(dup, 1);
      series[rest].emplace_back(bound, value);
    }
    if (series.empty()) throw std::runtime_error(family + ": no +Inf bucket");
    for (auto& [labels, buckets] : series) {
      std::sort(buckets.begin(), buckets.end());
      double prev = 0;
      for (const auto& b : buckets) {
        if (b.second < prev) throw std::runtime_error(family + ": buckets are not cumulative");
        prev = b.second;
      }
      const std::string suffix = labels.empty() ? "" : "{" + labels + "}";
      if (!std::isinf(buckets.back().first)) throw std::runtime_error(family + ": no +Inf bucket");
      if (m.at(family + "_count" + suffix) != prev)
        throw std::runtime_error(family + ": the +Inf bucket is not _count");
      m.at(family + "_sum" + suffix);
    }
  }
  return m;
}

}  // namespace pagoda::testing
