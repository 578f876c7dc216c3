// Moving a mapped model's weights into memory while it runs: greedy
// generation with the move held back one matrix per step (a gate in the
// loader) gives bit-identical logits, step by step, to the model read into
// memory and packed before its first pass: before, during and after the move.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "gguf/file.h"
#include "kernels/panels.h"
#include "model/model.h"
#include "tools/synthetic.h"
#include "util/error.h"

namespace pagoda {
namespace {

// Lets the loader move matrices up to a count; waits at most 10 s (a test
// that forgets to open it fails instead of hanging).
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  size_t allowed = 0;
  void allow(size_t n) {
    {
      std::lock_guard lock(mu);
      allowed = std::max(allowed, n);
    }
    cv.notify_all();
  }
  void wait(size_t i) {
    std::unique_lock lock(mu);
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return allowed > i; });
  }
};

// Polls cond for up to 10 s.
template <class F>
bool eventually(const F& cond) {
  for (int i = 0; i < 10000; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return cond();
}

std::string write_model(const SyntheticModelSpec& spec, const std::string& name) {
  const auto path = std::filesystem::path(::testing::TempDir()) / (name + std::to_string(::getpid()) + ".gguf");
  const auto bytes = synthetic_model(spec).to_bytes();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return path.string();
}

size_t argmax(const std::vector<float>& v) { return size_t(std::max_element(v.begin(), v.end()) - v.begin()); }

void generate_while_moving(const SyntheticModelSpec& spec, const char* name) {
  SCOPED_TRACE(name);
  const std::string path = write_model(spec, name);
  // The reference: read into memory and packed before its first pass.
  auto ref = Model::load(path, Residency::kInMemory);
  auto model = Model::load(path, Residency::kMapped);
  Gate gate;
  std::atomic<bool> done{false};
  WeightMover::Options o;
  o.before_matrix = [&](size_t i) { gate.wait(i); };
  o.on_done = [&](double) { done = true; };
  ASSERT_TRUE(model->move_into_memory(o));
  const WeightMover& mover = *model->mover();
  const size_t units = mover.matrices();
  ASSERT_EQ(units, size_t(7 * spec.n_layer + (spec.tied_embeddings ? 1 : 2)));

  const int block_size = 16;
  const std::vector<int32_t> table = {0, 1, 2, 3};
  KvStorage kv_ref(ref->config(), 4, block_size), kv(model->config(), 4, block_size);
  ThreadPool pool(2);
  std::vector<float> want, got;
  std::vector<int32_t> tokens = {1, 17, 42, 99, 7, 260};
  int pos = 0;
  std::vector<size_t> adopted_seen;
  for (size_t step = 0; step <= units + 2; ++step) {
    Batch batch;
    const int s = batch.add_sequence(table);
    for (; pos < int(tokens.size()); ++pos) batch.add(tokens[size_t(pos)], s, pos, true);
    ref->forward(batch, kv_ref, pool, want);
    model->forward(batch, kv, pool, got);
    adopted_seen.push_back(mover.adopted());
    ASSERT_EQ(want.size(), got.size());
    ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
        << "step " << step << " with " << mover.adopted() << " of " << units << " matrices moved";
    const std::vector<float> last(got.end() - spec.n_vocab, got.end());
    tokens.push_back(int32_t(argmax(last)));
    // The next pass sees exactly one more matrix moved.
    gate.allow(step + 1);
    ASSERT_TRUE(eventually([&] { return mover.ready() >= std::min(step + 1, units); }));
  }
  EXPECT_EQ(adopted_seen.front(), 0u);
  EXPECT_EQ(adopted_seen[units / 2], units / 2);
  EXPECT_EQ(adopted_seen.back(), units);
  // Every matrix now reads the arena, packed as the reference's.
  EXPECT_TRUE(eventually([&] { return done.load(); }));
  const ModelWeights &w = model->weights(), &r = ref->weights();
  for (size_t l = 0; l < w.layers.size(); ++l) {
    EXPECT_NE(w.layers[l].w_down.data, model->file().find_tensor(w.layers[l].w_down.name)->data);
    EXPECT_EQ(w.layers[l].w_down.panel_rows, r.layers[l].w_down.panel_rows);
    EXPECT_EQ(w.layers[l].wq.panel_rows, r.layers[l].wq.panel_rows);
  }
  // Where this CPU runs panels, the passes above compared rows against panels.
  if (prefers_panels(spec.type)) EXPECT_GT(r.layers[0].wq.panel_rows, 0);
  EXPECT_EQ(w.output.panel_rows, r.output.panel_rows);
  EXPECT_EQ(w.token_embd.panel_rows, r.token_embd.panel_rows);
  EXPECT_NE(w.token_embd.data, model->file().find_tensor("token_embd.weight")->data);
  model.reset();
  std::filesystem::remove(path);
}

TEST(WeightMover, GreedyGenerationIsBitIdenticalBeforeDuringAndAfterTheMove) {
  SyntheticModelSpec q8;
  q8.type = TensorType::Q8_0;
  q8.n_vocab = 330;  // 20 panels and a tail of 10 rows
  generate_while_moving(q8, "q8_0_tied");

  SyntheticModelSpec q4k;
  q4k.type = TensorType::Q4_K;
  q4k.n_embd = 256;
  q4k.n_ff = 512;
  q4k.tied_embeddings = false;
  generate_while_moving(q4k, "q4_k_untied");

  SyntheticModelSpec f16;  // no panels: moved, not packed
  f16.type = TensorType::F16;
  f16.tied_embeddings = false;
  generate_while_moving(f16, "f16_untied");
}

TEST(WeightMover, StopsWhenTheModelGoesMidMove) {
  SyntheticModelSpec spec;
  spec.type = TensorType::Q8_0;
  spec.n_layer = 4;
  const std::string path = write_model(spec, "stop");
  for (int i = 0; i < 3; ++i) {
    auto model = Model::load(path, Residency::kMapped);
    ASSERT_TRUE(model->move_into_memory({}));
    if (i == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }  // each destructor stops and joins the loader (ASan: nothing read after free)
  std::filesystem::remove(path);
}

TEST(WeightMover, RefusesAModelAlreadyInPanelsOrAlreadyMoving) {
  SyntheticModelSpec spec;
  spec.type = TensorType::Q8_0;
  const std::string path = write_model(spec, "twice");
  auto mapped = Model::load(path, Residency::kMapped);
  ASSERT_TRUE(mapped->move_into_memory({}));
  EXPECT_THROW(mapped->move_into_memory({}), InvalidArgument);
  if (prefers_panels(TensorType::Q8_0)) {
    auto packed = Model::load(path, Residency::kInMemory);
    EXPECT_THROW(packed->move_into_memory({}), InvalidArgument);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pagoda
