#include "model/weight_mover.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>

#include "gguf/file.h"
#include "kernels/panels.h"
#include "util/error.h"

namespace pagoda {
namespace {

// Bytes copied (and packed) between checks for stop and progress reports:
// small enough to stop within milliseconds, large enough to cost nothing.
constexpr size_t kChunkBytes = size_t(8) << 20;
constexpr size_t kAlign = 64;  // each matrix starts on a cache line, as the kernels like

size_t matrix_bytes(const Matrix& m) { return size_t(m.rows) * m.row_bytes; }

// The layers' matrices in order (decode runs them first), then the output;
// the embedding last (row lookups only, unless tied to the output).
std::vector<Matrix*> all_matrices(ModelWeights& w) {
  std::vector<Matrix*> out;
  for (auto& l : w.layers)
    for (Matrix* m : l.matrices()) out.push_back(m);
  out.push_back(&w.output);
  out.push_back(&w.token_embd);
  return out;
}

}  // namespace

size_t WeightMover::arena_bytes(const ModelWeights& w) {
  std::map<const uint8_t*, size_t> seen;
  for (Matrix* m : all_matrices(const_cast<ModelWeights&>(w))) seen.try_emplace(m->data, matrix_bytes(*m));
  size_t total = 0;
  for (const auto& [p, n] : seen) total += (n + kAlign - 1) / kAlign * kAlign;
  return total;
}

WeightMover::WeightMover(ModelWeights& w, std::shared_ptr<const GgufFile> file, Options options)
    : file_(std::move(file)), options_(std::move(options)) {
  std::map<const uint8_t*, size_t> unit_of;  // matrices on the same bytes move once
  for (Matrix* m : all_matrices(w)) {
    // Packed bytes would be packed again: a model read into memory has its layout already.
    if (m->panel_rows != 0) fail<InvalidArgument>("{}: the weights are in row panels already", m->name);
    const auto [it, fresh] = unit_of.try_emplace(m->data, units_.size());
    if (fresh) {
      Unit u;
      u.src = m->data;
      u.offset = arena_size_;
      u.shape = *m;
      arena_size_ += (matrix_bytes(*m) + kAlign - 1) / kAlign * kAlign;
      units_.push_back(std::move(u));
    }
    Unit& u = units_[it->second];
    u.targets.push_back(m);
    // An untied embedding serves row lookups only: packed, a lookup would unpack.
    if (m != &w.token_embd && prefers_panels(m->type) && has_panels(m->type)) u.pack = true;
  }
  if (arena_size_ > 0) {
    void* p = ::mmap(nullptr, arena_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail<ResourceExhausted>("cannot reserve {} MiB for the model's weights", arena_size_ >> 20);
    ::madvise(p, arena_size_, MADV_HUGEPAGE);  // a hint: where THP is off, plain pages
    arena_ = static_cast<uint8_t*>(p);
  }
  thread_ = std::thread([this] { run(); });
}

WeightMover::~WeightMover() {
  stop_.store(true);
  { std::lock_guard lock(mu_); }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (arena_) ::munmap(arena_, arena_size_);
}

bool WeightMover::adopt() {
  const size_t ready = ready_.load(std::memory_order_acquire);
  if (adopted_ == units_.size()) return true;
  for (; adopted_ < ready; ++adopted_) {
    const Unit& u = units_[adopted_];
    for (Matrix* m : u.targets) {
      m->data = arena_ + u.offset;
      m->panel_rows = u.panel_rows;
    }
  }
  if (adopted_ < units_.size()) return false;
  {
    std::lock_guard lock(mu_);
    all_adopted_ = true;
  }
  cv_.notify_all();
  return true;
}

void WeightMover::run() {
  // Below the serving threads: on a busy machine the move waits, not decode.
  // (Linux: a thread's own nice value, by its id.)
  errno = 0;
  const int nice_now = ::getpriority(PRIO_PROCESS, 0);
  if (errno == 0) ::setpriority(PRIO_PROCESS, ::gettid(), std::min(19, nice_now + options_.nice));
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < units_.size(); ++i) {
    if (options_.before_matrix) options_.before_matrix(i);
    if (stop_.load() || !move(units_[i])) return;
    ready_.store(i + 1, std::memory_order_release);
  }
  if (options_.on_done) options_.on_done(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  wait_adopted_and_release();
}

bool WeightMover::move(Unit& u) {
  const Matrix& m = u.shape;
  uint8_t* dst = arena_ + u.offset;
  // Whole panels per chunk, so each chunk packs on its own.
  const int chunk_rows = std::max(kPanelRows, int(kChunkBytes / m.row_bytes) / kPanelRows * kPanelRows);
  uint64_t done_before = 0, total = 0;
  for (const Unit& v : units_) {
    total += matrix_bytes(v.shape);
    if (&v < &u) done_before += matrix_bytes(v.shape);
  }
  for (int r = 0; r < m.rows; r += chunk_rows) {
    if (stop_.load(std::memory_order_relaxed)) return false;
    const int n = std::min(chunk_rows, m.rows - r);
    const size_t at = size_t(r) * m.row_bytes;
    std::memcpy(dst + at, u.src + at, size_t(n) * m.row_bytes);
    if (u.pack) u.panel_rows += pagoda::pack_panels(m.type, dst + at, m.row_bytes, n);
    if (options_.progress) options_.progress("moving into memory", done_before + at + size_t(n) * m.row_bytes, total);
  }
  return true;
}

void WeightMover::wait_adopted_and_release() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return all_adopted_ || stop_.load(); });
  if (!all_adopted_) return;
  lock.unlock();
  file_->release_pages();
}

}  // namespace pagoda
