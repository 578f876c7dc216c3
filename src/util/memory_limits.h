// The limits on the memory this process may still take, as numbers: the
// machine's (MemAvailable), its cgroup's (v2 memory.max, v1
// memory.limit_in_bytes, the tightest ancestor's) and its own rlimits
// (RLIMIT_AS, RLIMIT_DATA). read_memory_limits() asks the system; what the
// engine makes of the numbers is engine/memory_plan.h's, tested with made-up
// limits.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace pagoda {

struct MemoryLimits {
  // Bytes; -1 where the limit is not set or cannot be read.
  int64_t physical = -1;       // RAM in all (sysconf)
  int64_t mem_available = -1;  // /proc/meminfo MemAvailable: page cache counts as free
  // The cgroup (or ancestor) with the least room: its limit, and its usage
  // less the page cache it could drop (inactive files), as container
  // runtimes count a working set.
  int64_t cgroup_limit = -1, cgroup_used = -1;
  int64_t as_limit = -1, as_used = -1;      // RLIMIT_AS; VmSize: every mapping, the model file's too
  int64_t data_limit = -1, data_used = -1;  // RLIMIT_DATA; VmData: private writable mappings
};

MemoryLimits read_memory_limits();

// A file's whole text, or nullopt where it cannot be read (tests pass a fake).
using ReadTextFile = std::function<std::optional<std::string>(const std::string& path)>;

// The cgroup part of MemoryLimits from /proc/self/cgroup, /proc/self/mountinfo
// and the cgroup files they lead to, all through `read`.
void read_cgroup_memory(const ReadTextFile& read, MemoryLimits& out);

// "VmSize:" style fields of /proc/self/status and /proc/meminfo, in bytes; -1 if absent.
int64_t kib_field(const std::string& text, const std::string& name);

}  // namespace pagoda
