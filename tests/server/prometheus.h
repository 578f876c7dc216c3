// A strict reader of Prometheus text exposition (format 0.0.4), enough to
// check what /metrics serves: every sample belongs to a family declared by
// # TYPE, names and labels are well formed, values are numbers, histogram
// buckets are cumulative and end with +Inf == _count.
#pragma once

#include <map>
#include <string>

namespace pagoda::testing {

struct PromMetrics {
  std::map<std::string, std::string> types;  // family -> counter|gauge|histogram|...
  std::map<std::string, double> samples;     // `name{labels}` exactly as written -> value
  // The sample's value; throws std::runtime_error naming it when absent.
  double at(const std::string& key) const;
};

// Throws std::runtime_error naming the line for anything malformed.
PromMetrics parse_prometheus(const std::string& text);

}  // namespace pagoda::testing
