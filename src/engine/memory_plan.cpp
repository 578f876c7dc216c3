// The memory decision at load; see memory_plan.h.
#include "engine/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "kv/pool_size.h"

namespace pagoda {
namespace {

struct Limit {
  std::string name;
  int64_t free = 0;         // bytes still free under it, before the reserve
  bool page_cache = false;  // the mapped weights' page cache counts under it
  std::string figures;      // for the log
};

std::vector<Limit> limits_of(const MemoryLimits& m) {
  std::vector<Limit> out;
  if (m.mem_available >= 0)
    out.push_back({"MemAvailable", m.mem_available, true, "MemAvailable " + format_bytes(m.mem_available)});
  if (m.cgroup_limit >= 0)
    out.push_back({"the cgroup's memory limit", m.cgroup_limit - m.cgroup_used, true,
                   fmt::format("cgroup {} with {} used", format_bytes(m.cgroup_limit), format_bytes(m.cgroup_used))});
  if (m.as_limit >= 0)
    out.push_back({"RLIMIT_AS", m.as_limit - m.as_used, false,
                   fmt::format("RLIMIT_AS {} with {} mapped", format_bytes(m.as_limit), format_bytes(m.as_used))});
  if (m.data_limit >= 0)
    out.push_back(
        {"RLIMIT_DATA", m.data_limit - m.data_used, false,
         fmt::format("RLIMIT_DATA {} with {} in use", format_bytes(m.data_limit), format_bytes(m.data_used))});
  return out;
}

struct Left {
  int64_t bytes = 0;
  std::string limit;
};

// What the tightest limit leaves once the weights are placed.
// keep_cache: the mapped weights' page cache counts where it is memory.
Left tightest(const std::vector<Limit>& limits, const MemoryPlanInput& in, Residency residency, bool keep_cache) {
  Left best;
  for (size_t i = 0; i < limits.size(); ++i) {
    const Limit& l = limits[i];
    const bool weights_count = residency == Residency::kInMemory || (keep_cache && l.page_cache);
    const int64_t left = l.free - in.reserve_bytes - (weights_count ? in.weight_bytes : 0);
    if (i == 0 || left < best.bytes) best = {left, l.name};
  }
  return best;
}

}  // namespace

int64_t process_reserve_bytes(int engine_threads) {
  constexpr int64_t kMiB = int64_t(1) << 20;
  return 256 * kMiB + int64_t(std::max(0, engine_threads)) * 8 * kMiB;
}

MemoryPlan plan_memory(const MemoryPlanInput& in) {
  MemoryPlan p;
  const std::vector<Limit> limits = limits_of(in.limits);
  const std::string weights = format_bytes(in.weight_bytes);
  if (limits.empty()) {
    p.residency = in.may_copy ? Residency::kInMemory : Residency::kMapped;
    p.summary = fmt::format("memory: no limit on this process's memory could be read; the weights ({}) are {}", weights,
                            in.may_copy ? "copied into memory" : "served from the file's map (--mmap)");
    return p;
  }
  std::string figures;
  for (const Limit& l : limits) figures += (figures.empty() ? "" : ", ") + l.figures;
  figures += fmt::format("; {} kept for the process", format_bytes(in.reserve_bytes));
  const Left copy = tightest(limits, in, Residency::kInMemory, true);
  std::string how;
  if (in.may_copy && copy.bytes >= in.kv_needs_bytes) {
    p.residency = Residency::kInMemory;
    p.left_bytes = p.max_bytes = copy.bytes;
    p.limit = copy.limit;
    how = "copied into memory";
  } else {
    p.residency = Residency::kMapped;
    const Left cached = tightest(limits, in, Residency::kMapped, true);
    p.left_bytes = cached.bytes;
    p.max_bytes = tightest(limits, in, Residency::kMapped, false).bytes;
    p.limit = cached.limit;
    if (in.may_copy) {
      p.warn = true;
      how =
          fmt::format("served from the file's map: a copy would leave {} under {}, less than the {} the KV cache needs",
                      format_bytes(std::max<int64_t>(0, copy.bytes)), copy.limit, format_bytes(in.kv_needs_bytes));
    } else {
      how = "served from the file's map (--mmap)";
    }
  }
  // Known limits leave at least nothing: -1 would read as no limit at all.
  p.left_bytes = std::max<int64_t>(0, p.left_bytes);
  p.max_bytes = std::max<int64_t>(0, p.max_bytes);
  p.left_why = fmt::format("left after the weights ({}, {}) under {}", weights,
                           p.residency == Residency::kInMemory ? "in memory" : "mapped", p.limit);
  p.summary = fmt::format("memory: the weights ({}) are {}; {} {} ({})", weights, how, format_bytes(p.left_bytes),
                          p.left_why, figures);
  return p;
}

}  // namespace pagoda
