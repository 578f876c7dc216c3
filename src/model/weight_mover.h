// Serving a mapped model at once while its weights move into memory.
//
// `pagoda serve` maps the model file (ready in a fraction of a second) and
// then this class's low-priority thread copies each weight matrix into one
// anonymous, huge-page-backed arena and packs it into row panels there where
// the CPU runs them fast: the layout Residency::kInMemory and pack_panels
// build before serving, built here while serving. The model adopts each
// finished matrix between forward passes (adopt(), from Model::forward):
// it takes only what is done and never waits. Outputs are bit-identical
// before, during and after (kernels/panels.h: the panel kernels compute
// exactly what the row kernels do). Once every matrix is adopted, the thread
// drops the mapped file's pages from the process (GgufFile::release_pages),
// so the weights are held once.
//
// Threads: the loader writes only the arena bytes of matrices it has not yet
// published; adopt() rewrites the Matrix views on the thread that runs the
// forward passes, between them. ready_ (release/acquire) orders the two.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "model/weights.h"
#include "util/progress.h"

namespace pagoda {

class GgufFile;

class WeightMover {
 public:
  struct Options {
    // Bytes of the matrices moved so far (stage "moving into memory").
    LoadProgress progress;
    // Once, on the loader thread, when every matrix is moved (the model
    // adopts them at its next forward pass, then the map's pages are
    // released): the seconds since the mover started.
    std::function<void(double seconds)> on_done;
    int nice = 10;  // added to the loader thread's nice value: serving comes first
    // Tests: called on the loader thread before matrix i is moved (it may
    // block, to interleave the move with forward passes deterministically).
    std::function<void(size_t i)> before_matrix;
  };

  // The bytes an arena for w's matrices takes (what start() checks against
  // the memory available).
  static size_t arena_bytes(const ModelWeights& w);
  // Starts moving w's matrices (views into file's map). w and file outlive
  // the mover; w changes only in adopt().
  WeightMover(ModelWeights& w, std::shared_ptr<const GgufFile> file, Options options);
  ~WeightMover();  // stops the loader between chunks; the arena lives as long as this
  WeightMover(const WeightMover&) = delete;
  WeightMover& operator=(const WeightMover&) = delete;

  // Points the weights at every matrix finished since the last call; true
  // once all are. Only between forward passes, on the thread that runs them.
  bool adopt();

  size_t matrices() const { return units_.size(); }  // distinct matrices (tied ones count once)
  size_t ready() const { return ready_.load(std::memory_order_acquire); }
  size_t adopted() const { return adopted_; }

 private:
  // One matrix's bytes (or several matrices' on the same bytes, as a tied
  // output and embedding) and where they go.
  struct Unit {
    const uint8_t* src = nullptr;
    size_t offset = 0;  // in the arena
    Matrix shape;       // type, rows, row_bytes of the stored matrix
    bool pack = false;  // into row panels (a matrix only looked up by rows is not)
    int panel_rows = 0;
    std::vector<Matrix*> targets;
  };

  void run();
  bool move(Unit& u);  // false when stopped
  void wait_adopted_and_release();

  std::shared_ptr<const GgufFile> file_;
  Options options_;
  std::vector<Unit> units_;
  uint8_t* arena_ = nullptr;
  size_t arena_size_ = 0;
  std::atomic<size_t> ready_{0};
  std::atomic<bool> stop_{false};
  size_t adopted_ = 0;  // the forward thread's
  std::mutex mu_;
  std::condition_variable cv_;
  bool all_adopted_ = false;  // under mu_
  std::thread thread_;
};

}  // namespace pagoda
