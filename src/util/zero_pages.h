// An array of zero-initialized elements whose memory the kernel hands out
// page by page on first touch (an anonymous private mapping): reserving a
// large buffer costs nothing up front, and what is never written is never
// resident. The KV pool is one: a server starts at once, and its pool's
// memory grows with the contexts it actually holds.
#pragma once

#include <cstddef>
#include <utility>

namespace pagoda {

class ZeroPagesBase {
 protected:
  ZeroPagesBase() = default;
  explicit ZeroPagesBase(size_t bytes);  // ResourceExhausted if the address space cannot be had
  ~ZeroPagesBase();
  ZeroPagesBase(ZeroPagesBase&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  ZeroPagesBase& operator=(ZeroPagesBase&& o) noexcept;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

template <class T>
class ZeroPages : ZeroPagesBase {
 public:
  ZeroPages() = default;
  explicit ZeroPages(size_t n) : ZeroPagesBase(n * sizeof(T)), size_(n) {}
  ZeroPages(ZeroPages&& o) noexcept : ZeroPagesBase(std::move(o)), size_(std::exchange(o.size_, 0)) {}
  ZeroPages& operator=(ZeroPages&& o) noexcept {
    if (this != &o) {
      ZeroPagesBase::operator=(std::move(o));
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }

  T* data() { return static_cast<T*>(data_); }
  const T* data() const { return static_cast<const T*>(data_); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }

 private:
  size_t size_ = 0;
};

}  // namespace pagoda
