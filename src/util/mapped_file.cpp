#include "util/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/error.h"

namespace pagoda {

size_t available_memory_bytes() {
  FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kib = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
  std::fclose(f);
  return size_t(kib) * 1024;
}

namespace {

// Reads the whole of fd into fresh anonymous memory (huge pages requested),
// then makes it read-only. Returns nullptr with errno set on failure.
void* read_into_memory(int fd, size_t size, const LoadProgress& progress) {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  ::madvise(p, size, MADV_HUGEPAGE);  // a hint: where THP is off, plain pages
  auto* dst = static_cast<uint8_t*>(p);
  for (size_t done = 0; done < size;) {
    // 64 MiB at a time: as fast as larger reads, and progress to show.
    const ssize_t n = ::pread(fd, dst + done, std::min<size_t>(size - done, size_t(64) << 20), off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n == 0 ? EIO : errno;  // 0: the file shrank while read
      ::munmap(p, size);
      errno = err;
      return nullptr;
    }
    done += size_t(n);
    if (progress) progress("reading", done, size);
  }
  ::mprotect(p, size, PROT_READ);
  return p;
}

}  // namespace

MappedFile::MappedFile(const std::string& path, Residency residency, const LoadProgress& progress) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open {}: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("{} is not a regular file", path);
  }
  size_ = size_t(st.st_size);
  if (residency == Residency::kInMemory) {
    const size_t available = available_memory_bytes();
    if (available != 0 && size_ + (size_t(256) << 20) > available) residency = Residency::kMapped;
  }
  residency_ = residency;
  if (size_ > 0) {
    void* p = residency == Residency::kInMemory ? read_into_memory(fd, size_, progress)
                                                : ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == nullptr || p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      fail("cannot {} {}: {}", residency == Residency::kInMemory ? "read" : "map", path, std::strerror(err));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

bool MappedFile::edit(const std::function<void(uint8_t*)>& fn) const {
  if (residency_ != Residency::kInMemory || !data_) return false;
  auto* bytes = const_cast<uint8_t*>(data_);
  if (::mprotect(bytes, size_, PROT_READ | PROT_WRITE) != 0) return false;
  struct ReadOnlyAgain {  // also when fn throws
    uint8_t* p;
    size_t n;
    ~ReadOnlyAgain() { ::mprotect(p, n, PROT_READ); }
  } guard{bytes, size_};
  fn(bytes);
  return true;
}

void MappedFile::release_pages() const {
  if (residency_ == Residency::kMapped && data_) ::madvise(const_cast<uint8_t*>(data_), size_, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);  // either kind is a mapping
}

}  // namespace pagoda
