#include "model/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pagoda {
namespace {

// Softmax of v[0..n) in place, as ggml computes it: the exponentials of the
// differences from the maximum, summed in double.
void softmax(float* v, int n) {
  const float max = *std::max_element(v, v + n);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += (v[i] = std::exp(v[i] - max));
  const float inv = float(1.0 / sum);
  for (int i = 0; i < n; ++i) v[i] *= inv;
}

// The first k of [0, n) ranked by score, highest first, the lower index first
// among equals; a NaN ranks last (a strict weak order whatever the scores).
void top_k(const float* score, int n, int k, int* out) {
  thread_local std::vector<int> index;
  index.resize(size_t(n));
  std::iota(index.begin(), index.end(), 0);
  auto key = [&](int i) { return std::isnan(score[i]) ? -INFINITY : score[i]; };
  std::partial_sort(index.begin(), index.begin() + k, index.end(), [&](int a, int b) {
    const float ka = key(a), kb = key(b);
    return ka > kb || (ka == kb && a < b);
  });
  std::copy_n(index.begin(), k, out);
}

}  // namespace

void route_tokens(const MoeSpec& moe, const float* logits, int n_tokens, ExpertChoice* choices) {
  const int n = moe.n_expert, k = moe.n_used;
  std::vector<float> probs(static_cast<size_t>(n)), weights(static_cast<size_t>(k));
  std::vector<int> chosen(static_cast<size_t>(k));
  for (int t = 0; t < n_tokens; ++t) {
    std::copy_n(logits + size_t(t) * n, n, probs.begin());
    if (moe.gating == ExpertGating::SoftmaxTopK) softmax(probs.data(), n);
    top_k(probs.data(), n, k, chosen.data());
    for (int r = 0; r < k; ++r) weights[size_t(r)] = probs[size_t(chosen[size_t(r)])];
    if (moe.gating == ExpertGating::TopKSoftmax) softmax(weights.data(), k);
    if (moe.normalize) {
      float sum = 0;
      for (float w : weights) sum += w;
      sum = std::max(sum, 6.103515625e-5f);  // as llama.cpp: the smallest normal F16, against a zero sum
      for (float& w : weights) w /= sum;
    }
    for (int r = 0; r < k; ++r) choices[size_t(t) * k + r] = {chosen[size_t(r)], weights[size_t(r)] * moe.scale};
  }
}

void MoeFfn::forward(const LayerWeights& lw, const ModelConfig& c, const float* x, int n_tokens, float* out,
                     ThreadPool& pool, const float* router_x) {
  const MoeSpec& moe = c.moe;
  const int E = c.n_embd, F = moe.n_ff, k = moe.n_used;
  const size_t T = size_t(n_tokens);
  // An expert's hidden row: its biases (gpt-oss), then the gated activation.
  auto activate = [&](size_t e, float* gate, float* up) {
    if (!lw.gate_exps_b.empty())
      for (int i = 0; i < F; ++i) gate[i] += lw.gate_exps_b[e * F + i];
    if (!lw.up_exps_b.empty())
      for (int i = 0; i < F; ++i) up[i] += lw.up_exps_b[e * F + i];
    gated_activation(c.act, gate, up, F);
  };
  auto add_down_bias = [&](size_t e, float* y) {
    if (!lw.down_exps_b.empty())
      for (int i = 0; i < E; ++i) y[i] += lw.down_exps_b[e * E + i];
  };

  logits_.resize(T * size_t(moe.n_expert));
  matmul(lw.router, router_x ? router_x : x, n_tokens, logits_.data(), pool);
  if (!lw.router_b.empty())
    for (size_t t = 0; t < T; ++t)
      for (int e = 0; e < moe.n_expert; ++e) logits_[t * moe.n_expert + e] += lw.router_b[size_t(e)];
  choices_.resize(T * size_t(k));
  route_tokens(moe, logits_.data(), n_tokens, choices_.data());
  users_.resize(size_t(moe.n_expert));
  for (auto& u : users_) u.clear();
  for (size_t i = 0; i < choices_.size(); ++i) users_[size_t(choices_[i].expert)].push_back(int(i));
  experts_run_ = int(std::count_if(users_.begin(), users_.end(), [](const auto& u) { return !u.empty(); }));
  router_margin_ = INFINITY;
  for (size_t t = 0; t < T && k < moe.n_expert; ++t) {
    const float* z = &logits_[t * moe.n_expert];
    float kth = INFINITY, next = -INFINITY;
    for (int r = 0; r < k; ++r) kth = std::min(kth, z[choices_[t * k + size_t(r)].expert]);
    for (int e = 0; e < moe.n_expert; ++e)
      if (std::none_of(&choices_[t * k], &choices_[t * k] + k, [&](const ExpertChoice& c) { return c.expert == e; }))
        next = std::max(next, z[e]);
    router_margin_ = std::min(router_margin_, kth - next);
  }
  slots_.resize(T * size_t(k) * size_t(E));

  if (n_tokens == 1) {
    // One input for every chosen expert: their gate and up matrices run as one call.
    gate_.resize(size_t(k) * F);
    up_.resize(size_t(k) * F);
    std::vector<MatmulOut> outs;
    for (int r = 0; r < k; ++r) {
      const size_t e = size_t(choices_[size_t(r)].expert);
      outs.push_back({lw.gate_exps[e], &gate_[size_t(r) * F]});
      outs.push_back({lw.up_exps[e], &up_[size_t(r) * F]});
    }
    matmul(outs, x, 1, pool);
    for (int r = 0; r < k; ++r) {
      const size_t e = size_t(choices_[size_t(r)].expert);
      activate(e, &gate_[size_t(r) * F], &up_[size_t(r) * F]);
      matmul(lw.down_exps[e], &gate_[size_t(r) * F], 1, &slots_[size_t(r) * E], pool);
      add_down_bias(e, &slots_[size_t(r) * E]);
    }
  } else {
    // Each chosen expert once, over the rows of the tokens that chose it.
    for (size_t e = 0; e < users_.size(); ++e) {
      const std::vector<int>& slots = users_[e];
      if (slots.empty()) continue;
      const int n = int(slots.size());
      xe_.resize(size_t(n) * E);
      for (int i = 0; i < n; ++i) std::copy_n(x + size_t(slots[size_t(i)] / k) * E, E, &xe_[size_t(i) * E]);
      gate_.resize(size_t(n) * F);
      up_.resize(size_t(n) * F);
      matmul({{lw.gate_exps[e], gate_.data()}, {lw.up_exps[e], up_.data()}}, xe_.data(), n, pool);
      for (int i = 0; i < n; ++i) activate(e, &gate_[size_t(i) * F], &up_[size_t(i) * F]);
      ye_.resize(size_t(n) * E);
      matmul(lw.down_exps[e], gate_.data(), n, ye_.data(), pool);
      for (int i = 0; i < n; ++i) {
        add_down_bias(e, &ye_[size_t(i) * E]);
        std::copy_n(&ye_[size_t(i) * E], E, &slots_[size_t(slots[size_t(i)]) * E]);
      }
    }
  }

  // Each token's outputs, weighted, in the router's order.
  for (size_t t = 0; t < T; ++t) {
    float* o = out + t * E;
    std::fill_n(o, E, 0.0f);
    for (int r = 0; r < k; ++r) {
      const ExpertChoice& ch = choices_[t * k + size_t(r)];
      const float* y = &slots_[(t * k + size_t(r)) * E];
      if (lw.down_exps_scale.empty()) {
        for (int i = 0; i < E; ++i) o[i] += ch.weight * y[i];
      } else {  // the expert's own scale first, then its weight (ggml's order)
        const float s = lw.down_exps_scale[size_t(ch.expert)];
        for (int i = 0; i < E; ++i) o[i] += ch.weight * (y[i] * s);
      }
    }
  }
  if (moe.n_ff_shared > 0) add_shared_expert(lw, c, x, n_tokens, out, pool);
}

// out += sigmoid(shexp_gate . x) * down(silu(gate(x)) * up(x)), per token.
void MoeFfn::add_shared_expert(const LayerWeights& lw, const ModelConfig& c, const float* x, int n_tokens, float* out,
                               ThreadPool& pool) {
  const size_t T = size_t(n_tokens), E = size_t(c.n_embd), S = size_t(c.moe.n_ff_shared);
  gate_.resize(T * S);
  up_.resize(T * S);
  ye_.resize(T * E);
  matmul({{lw.gate_shexp, gate_.data()}, {lw.up_shexp, up_.data()}}, x, n_tokens, pool);
  for (size_t t = 0; t < T; ++t) swiglu(&gate_[t * S], &up_[t * S], int(S));
  matmul(lw.down_shexp, gate_.data(), n_tokens, ye_.data(), pool);
  for (size_t t = 0; t < T; ++t) {
    double dot = 0;
    for (size_t i = 0; i < E; ++i) dot += double(lw.shexp_gate[i]) * x[t * E + i];
    const float g = 1.0f / (1.0f + std::exp(-float(dot)));
    for (size_t i = 0; i < E; ++i) out[t * E + i] += g * ye_[t * E + i];
  }
}

}  // namespace pagoda
