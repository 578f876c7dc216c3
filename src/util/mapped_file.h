// A whole file's bytes, read-only, either mapped (nothing copied at load) or
// read into memory backed by transparent huge pages where the kernel allows
// them. Model weights are read in place through either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "util/progress.h"

namespace pagoda {

enum class Residency {
  // A read-only map of the file: opens at once, shares the page cache with
  // other processes, and faults pages in on first use.
  kMapped,
  // Read into anonymous memory at open, asking for huge pages
  // (MADV_HUGEPAGE): a copy at load, but a model then costs far fewer TLB
  // misses to stream through; batch-1 decode of a 1B model ran 5-10% faster.
  // A file larger than the memory available (MemAvailable, less 256 MiB) is
  // mapped instead: the kernel can page a mapping, a copy would not fit.
  kInMemory,
};

// What the kernel could hand out now without swapping (MemAvailable of
// /proc/meminfo), or 0 where unknown.
size_t available_memory_bytes();

class MappedFile {
 public:
  // Throws Error naming the path. progress: the bytes read (kInMemory only).
  explicit MappedFile(const std::string& path, Residency residency = Residency::kMapped,
                      const LoadProgress& progress = {});
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  Residency residency() const { return residency_; }  // kMapped where kInMemory did not fit

  // Runs edit(bytes) with the in-memory copy writable (it is read-only
  // otherwise) and returns true; a mapping is shared with the page cache and
  // never written: false, edit not called.
  bool edit(const std::function<void(uint8_t*)>& fn) const;

  // A mapping drops its pages from this process (they stay in the page cache;
  // data() stays valid and faults them back in if read): for a model whose
  // weights were copied elsewhere (model/weight_mover.h). A no-op otherwise.
  void release_pages() const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  Residency residency_ = Residency::kMapped;
};

}  // namespace pagoda
