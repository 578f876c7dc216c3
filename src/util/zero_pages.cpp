#include "util/zero_pages.h"

#include <sys/mman.h>

#include "util/error.h"

namespace pagoda {

ZeroPagesBase::ZeroPagesBase(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    bytes_ = 0;
    fail<ResourceExhausted>("cannot reserve {} MiB of memory", bytes >> 20);
  }
  data_ = p;
}

ZeroPagesBase::~ZeroPagesBase() {
  if (data_) munmap(data_, bytes_);
}

ZeroPagesBase& ZeroPagesBase::operator=(ZeroPagesBase&& o) noexcept {
  if (this != &o) {
    if (data_) munmap(data_, bytes_);
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

}  // namespace pagoda
