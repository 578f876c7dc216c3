// Reading the memory limits; see memory_limits.h.
#include "util/memory_limits.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <vector>

namespace pagoda {
namespace {

// A cgroup v1 "no limit" is a page-rounded INT64_MAX; anything this large is none.
constexpr int64_t kUnlimited = int64_t(1) << 60;

// A file's one non-negative number (v2's "max" is none): -1 where there is none.
int64_t parse_count(const std::optional<std::string>& text) {
  if (!text) return -1;
  std::string_view s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  int64_t v = -1;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && v >= 0 ? v : -1;
}

// "key value" lines (memory.stat): the value of key, or -1.
int64_t stat_field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  int64_t v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return -1;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

struct CgroupMount {
  std::string root, dir;  // the hierarchy's path mounted, and where
};

// The cgroup2 mount and the cgroup v1 mount holding the memory controller.
void find_mounts(const std::string& mountinfo, std::optional<CgroupMount>& v2, std::optional<CgroupMount>& v1) {
  std::istringstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    const auto fields = split(line, ' ');
    const auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || fields.end() - dash < 4) continue;
    const std::string& fstype = dash[1];
    CgroupMount m{fields[3], fields[4]};
    if (fstype == "cgroup2" && !v2) v2 = m;
    if (fstype == "cgroup" && !v1) {
      const auto opts = split(dash[3], ',');
      if (std::find(opts.begin(), opts.end(), "memory") != opts.end()) v1 = m;
    }
  }
}

// This process's directory in a mounted hierarchy. Inside a cgroup namespace
// the mount's root is not a prefix of the path: the mount itself is ours.
std::string cgroup_dir(const CgroupMount& m, std::string path) {
  if (m.root != "/") path = path.rfind(m.root, 0) == 0 ? path.substr(m.root.size()) : "";
  while (!path.empty() && path.back() == '/') path.pop_back();
  std::string dir = m.dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + path;
}

// Walks from dir up to the mount, keeping the level with the least room.
void tightest(const ReadTextFile& read, const CgroupMount& m, std::string dir, bool v2, MemoryLimits& out) {
  const char* limit_file = v2 ? "/memory.max" : "/memory.limit_in_bytes";
  const char* usage_file = v2 ? "/memory.current" : "/memory.usage_in_bytes";
  const char* inactive_key = v2 ? "inactive_file" : "total_inactive_file";  // v1's counts the subtree, as its usage
  std::string top = m.dir;
  while (top.size() > 1 && top.back() == '/') top.pop_back();
  for (;;) {
    const int64_t limit = parse_count(read(dir + limit_file));
    const int64_t usage = parse_count(read(dir + usage_file));
    if (limit >= 0 && limit < kUnlimited && usage >= 0) {
      const auto stat = read(dir + "/memory.stat");
      const int64_t inactive = stat ? std::max<int64_t>(0, stat_field(*stat, inactive_key)) : 0;
      const int64_t used = std::max<int64_t>(0, usage - inactive);
      if (out.cgroup_limit < 0 || limit - used < out.cgroup_limit - out.cgroup_used) {
        out.cgroup_limit = limit;
        out.cgroup_used = used;
      }
    }
    if (dir.size() <= top.size()) break;
    const size_t slash = dir.rfind('/');
    if (slash == std::string::npos || slash < top.size()) break;
    dir = dir.substr(0, std::max(slash, top.size()));
  }
}

std::optional<std::string> read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int64_t soft_limit(int resource) {
  rlimit lim{};
  if (getrlimit(resource, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return -1;
  return lim.rlim_cur > rlim_t(kUnlimited) ? -1 : int64_t(lim.rlim_cur);
}

}  // namespace

int64_t kib_field(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(name.size() + 1));
    int64_t kib = -1;
    return fields >> kib ? kib * 1024 : -1;
  }
  return -1;
}

void read_cgroup_memory(const ReadTextFile& read, MemoryLimits& out) {
  const auto cgroups = read("/proc/self/cgroup");
  const auto mountinfo = read("/proc/self/mountinfo");
  if (!cgroups || !mountinfo) return;
  std::optional<CgroupMount> v2, v1;
  find_mounts(*mountinfo, v2, v1);
  std::istringstream in(*cgroups);
  std::string line;
  while (std::getline(in, line)) {
    // "id:controllers:path"; v2's is "0::path".
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    const auto names = split(controllers, ',');
    if (controllers.empty() && v2) tightest(read, *v2, cgroup_dir(*v2, path), true, out);
    if (v1 && std::find(names.begin(), names.end(), "memory") != names.end())
      tightest(read, *v1, cgroup_dir(*v1, path), false, out);
  }
}

MemoryLimits read_memory_limits() {
  MemoryLimits m;
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) m.physical = int64_t(pages) * page_size;
  if (const auto meminfo = read_text_file("/proc/meminfo")) m.mem_available = kib_field(*meminfo, "MemAvailable");
  read_cgroup_memory(read_text_file, m);
  const auto status = read_text_file("/proc/self/status");
  m.as_limit = soft_limit(RLIMIT_AS);
  if (m.as_limit >= 0) m.as_used = status ? kib_field(*status, "VmSize") : -1;
  m.data_limit = soft_limit(RLIMIT_DATA);
  if (m.data_limit >= 0) m.data_used = status ? kib_field(*status, "VmData") : -1;
  if (m.as_used < 0) m.as_limit = -1;  // a limit without its usage says nothing
  if (m.data_used < 0) m.data_limit = -1;
  return m;
}

}  // namespace pagoda
