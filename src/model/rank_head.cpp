// A reranker's classification head, as llama.cpp applies it under rank
// pooling: the pooled hidden state through cls (and tanh) where the file
// has it, then cls.output to one score per label; qwen3's rerankers (their
// labels "yes" and "no" taken from the LM head's rows) then softmax, so the
// first score is the probability of "yes".
#include <algorithm>
#include <cmath>

#include "model/model.h"
#include "util/error.h"

namespace pagoda {

std::vector<float> Model::rank_scores(std::span<const float> pooled, ThreadPool& pool) const {
  if (!has_rank_head())
    fail<Unsupported>("{}: rank pooling needs a classification head (cls.output.weight)", cfg_.arch);
  const int E = cfg_.n_embd;
  if (int(pooled.size()) != E) fail<InvalidArgument>("a pooled state of {} floats for width {}", pooled.size(), E);
  AlignedFloats x(pooled.begin(), pooled.end()), y;
  const auto add = [](AlignedFloats& v, const std::vector<float>& b) {
    for (size_t i = 0; i < b.size(); ++i) v[i] += b[i];
  };
  if (w_.cls.data) {
    y.resize(size_t(E));
    matmul(w_.cls, x.data(), 1, y.data(), pool);
    add(y, w_.cls_b);
    for (float& v : y) v = std::tanh(v);
    x.swap(y);
  }
  AlignedFloats out(size_t(w_.cls_out.rows));
  matmul(w_.cls_out, x.data(), 1, out.data(), pool);
  add(out, w_.cls_out_b);
  if (rank_reads_last()) {
    const float mx = *std::max_element(out.begin(), out.end());
    float z = 0;
    for (float& v : out) z += (v = std::exp(v - mx));
    for (float& v : out) v /= z;
  }
  return std::vector<float>(out.begin(), out.end());
}

}  // namespace pagoda
