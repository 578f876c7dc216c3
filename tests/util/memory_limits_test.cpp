// Reading the memory limits (util/memory_limits.h) from made-up /proc and
// cgroup files: v2, v1, a limit on an ancestor, a cgroup namespace.
#include "util/memory_limits.h"

#include <gtest/gtest.h>

#include <map>

namespace pagoda {
namespace {

constexpr int64_t kMiB = int64_t(1) << 20, kGiB = int64_t(1) << 30;

struct FakeFiles {
  std::map<std::string, std::string> files;
  ReadTextFile reader() const {
    return [this](const std::string& path) -> std::optional<std::string> {
      const auto it = files.find(path);
      return it == files.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
  }
};

const char* kV2Mounts =
    "25 30 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
    "30 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n";

TEST(MemoryLimits, KibFields) {
  const std::string status = "Name:\tpagoda\nVmPeak:\t  200 kB\nVmSize:\t  190540 kB\nVmData:\t   93720 kB\n";
  EXPECT_EQ(kib_field(status, "VmSize"), 190540 * int64_t(1024));
  EXPECT_EQ(kib_field(status, "VmData"), 93720 * int64_t(1024));
  EXPECT_EQ(kib_field(status, "VmSwap"), -1);
  EXPECT_EQ(kib_field("MemTotal: 24000000 kB\nMemAvailable:   23000000 kB\n", "MemAvailable"),
            23000000 * int64_t(1024));
}

// The working set is usage less the inactive page cache, as container
// runtimes count it; the tightest of the cgroup and its ancestors wins.
TEST(MemoryLimits, CgroupV2TakesTheTightestAncestor) {
  FakeFiles f;
  f.files["/proc/self/mountinfo"] = kV2Mounts;
  f.files["/proc/self/cgroup"] = "0::/system.slice/pagoda.service\n";
  const std::string leaf = "/sys/fs/cgroup/system.slice/pagoda.service";
  f.files[leaf + "/memory.max"] = "max\n";
  f.files[leaf + "/memory.current"] = std::to_string(3 * kGiB) + "\n";
  f.files["/sys/fs/cgroup/system.slice/memory.max"] = std::to_string(8 * kGiB) + "\n";
  f.files["/sys/fs/cgroup/system.slice/memory.current"] = std::to_string(5 * kGiB) + "\n";
  f.files["/sys/fs/cgroup/system.slice/memory.stat"] =
      "anon 100\nfile 200\ninactive_anon 0\nactive_anon 0\ninactive_file " + std::to_string(kGiB) + "\n";
  MemoryLimits m;
  read_cgroup_memory(f.reader(), m);
  EXPECT_EQ(m.cgroup_limit, 8 * kGiB);
  EXPECT_EQ(m.cgroup_used, 4 * kGiB);
  // A tighter limit on the leaf wins.
  f.files[leaf + "/memory.max"] = std::to_string(4 * kGiB);
  m = {};
  read_cgroup_memory(f.reader(), m);
  EXPECT_EQ(m.cgroup_limit, 4 * kGiB);
  EXPECT_EQ(m.cgroup_used, 3 * kGiB);
}

// Inside a cgroup namespace (a container) the path reads "/" and the mount is ours.
TEST(MemoryLimits, CgroupV2InANamespace) {
  FakeFiles f;
  f.files["/proc/self/mountinfo"] =
      "700 650 0:30 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw,nsdelegate\n";
  f.files["/proc/self/cgroup"] = "0::/\n";
  f.files["/sys/fs/cgroup/memory.max"] = std::to_string(2 * kGiB);
  f.files["/sys/fs/cgroup/memory.current"] = std::to_string(512 * kMiB);
  MemoryLimits m;
  read_cgroup_memory(f.reader(), m);
  EXPECT_EQ(m.cgroup_limit, 2 * kGiB);
  EXPECT_EQ(m.cgroup_used, 512 * kMiB);
}

// A hybrid machine (this one's layout): memory in v1, an empty unified tree.
TEST(MemoryLimits, CgroupV1MemoryController) {
  FakeFiles f;
  f.files["/proc/self/mountinfo"] =
      "40 30 0:35 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "41 30 0:36 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "42 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
  f.files["/proc/self/cgroup"] = "4:memory:/jobs/a\n1:cpu:/\n0::/\n";
  f.files["/sys/fs/cgroup/memory/jobs/a/memory.limit_in_bytes"] = "9223372036854771712\n";  // none
  f.files["/sys/fs/cgroup/memory/jobs/a/memory.usage_in_bytes"] = std::to_string(kGiB);
  f.files["/sys/fs/cgroup/memory/jobs/memory.limit_in_bytes"] = std::to_string(6 * kGiB);
  f.files["/sys/fs/cgroup/memory/jobs/memory.usage_in_bytes"] = std::to_string(2 * kGiB);
  f.files["/sys/fs/cgroup/memory/jobs/memory.stat"] =
      "cache 5\ninactive_file 7\ntotal_inactive_file " + std::to_string(512 * kMiB) + "\n";
  f.files["/sys/fs/cgroup/memory/memory.limit_in_bytes"] = "9223372036854771712\n";
  f.files["/sys/fs/cgroup/memory/memory.usage_in_bytes"] = std::to_string(10 * kGiB);
  MemoryLimits m;
  read_cgroup_memory(f.reader(), m);
  EXPECT_EQ(m.cgroup_limit, 6 * kGiB);
  EXPECT_EQ(m.cgroup_used, 2 * kGiB - 512 * kMiB);
}

TEST(MemoryLimits, NoCgroupLimit) {
  FakeFiles f;
  f.files["/proc/self/mountinfo"] = kV2Mounts;
  f.files["/proc/self/cgroup"] = "0::/user.slice\n";
  f.files["/sys/fs/cgroup/user.slice/memory.max"] = "max\n";
  f.files["/sys/fs/cgroup/user.slice/memory.current"] = "1000\n";
  MemoryLimits m;
  read_cgroup_memory(f.reader(), m);
  EXPECT_EQ(m.cgroup_limit, -1);
  read_cgroup_memory(FakeFiles{}.reader(), m);  // no /proc at all
  EXPECT_EQ(m.cgroup_limit, -1);
}

// This machine's: Linux always says MemAvailable; a limit comes with its usage.
TEST(MemoryLimits, ReadsThisMachine) {
  const MemoryLimits m = read_memory_limits();
  EXPECT_GT(m.physical, 64 * kMiB);
  EXPECT_GT(m.mem_available, 0);
  EXPECT_EQ(m.as_limit < 0, m.as_used < 0);
  EXPECT_EQ(m.data_limit < 0, m.data_used < 0);
  if (m.cgroup_limit >= 0) EXPECT_GE(m.cgroup_used, 0);
}

}  // namespace
}  // namespace pagoda
