#include "model/delta_net.h"

#include <algorithm>
#include <cmath>

#include "kernels/delta_net.h"

namespace pagoda {
namespace {

float softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }  // as ggml's, for the oracle
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// x / sqrt(sum(x^2) + eps): llama.cpp's L2 norm of q and k.
void l2_normalize(float* x, int n, float eps) {
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  const float inv = float(1.0 / std::sqrt(ss + eps));
  for (int i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace

// The causal convolution, channel by channel: output t is the K taps over
// the last K inputs (the state's K-1, then the tokens'), ending at input t.
// Channels are independent, so threads take channel ranges; the new state
// is the last K-1 inputs.
void DeltaNet::convolve(const Batch& batch, const std::vector<std::vector<int>>& seq_tokens, const DeltaNetWeights& w,
                        const ModelConfig& c, int layer, StateStorage& states, ThreadPool& pool) {
  const int C = c.delta_net.conv_channels(), K = c.delta_net.conv_kernel;
  const size_t chunk = 64;  // channels a unit: a cache line of each tap row, vectorized
  const size_t chunks = (size_t(C) + chunk - 1) / chunk;
  pool.parallel_for(
      size_t(batch.num_sequences()) * chunks,
      [&](size_t begin, size_t end) {
        for (size_t u = begin; u < end; ++u) {
          const int s = int(u / chunks);
          const int c0 = int(u % chunks * chunk), c1 = std::min(C, c0 + int(chunk));
          const auto& toks = seq_tokens[size_t(s)];
          if (toks.empty()) continue;
          const StateBuffer in = batch.state_in[size_t(s)], out = batch.state_out[size_t(s)];
          const float* state_in = in == kNoState ? nullptr : states.conv(in, layer);
          // Input j of the sequence's history: j < K-1 the state's, then token j-(K-1)'s.
          auto input = [&](int j) -> const float* {
            if (j >= K - 1) return &mixed_[size_t(toks[size_t(j - (K - 1))]) * C];
            return state_in ? state_in + size_t(j) * C : nullptr;  // null: zeros
          };
          for (size_t i = 0; i < toks.size(); ++i) {
            float* y = &conv_[size_t(toks[i]) * C];
            std::fill(y + c0, y + c1, 0.0f);
            for (int tap = 0; tap < K; ++tap) {
              const float* xin = input(int(i) + tap);
              if (!xin) continue;
              const float* wt = &w.conv[size_t(tap) * C];
              for (int ch = c0; ch < c1; ++ch) y[ch] += wt[ch] * xin[ch];
            }
            for (int ch = c0; ch < c1; ++ch) y[ch] = y[ch] * sigmoid(y[ch]);
          }
          float* state_out = states.conv(out, layer);
          const int n = int(toks.size());
          for (int j = 0; j < K - 1; ++j) {
            const float* xin = input(n + j);
            for (int ch = c0; ch < c1; ++ch) state_out[size_t(j) * C + ch] = xin ? xin[ch] : 0.0f;
          }
        }
      },
      1, size_t(batch.tokens.size()) * size_t(C) * size_t(K) * 4);
}

void DeltaNet::forward(const Batch& batch, const std::vector<std::vector<int>>& seq_tokens, const DeltaNetWeights& w,
                       const ModelConfig& c, int layer, StateStorage& states, const float* x, float* out,
                       ThreadPool& pool) {
  const DeltaNetSpec& d = c.delta_net;
  const int T = int(batch.tokens.size()), C = d.conv_channels(), Hk = d.n_k_heads, Hv = d.n_v_heads;
  const int dk = d.head_k_dim, dv = d.head_v_dim, V = Hv * dv;
  mixed_.resize(size_t(T) * C);
  conv_.resize(size_t(T) * C);
  z_.resize(size_t(T) * V);
  beta_.resize(size_t(T) * Hv);
  decay_.resize(size_t(T) * Hv);
  core_.resize(size_t(T) * V);
  matmul({{w.qkv, mixed_.data()}, {w.gate, z_.data()}, {w.beta, beta_.data()}, {w.alpha, decay_.data()}}, x, T, pool);
  convolve(batch, seq_tokens, w, c, layer, states, pool);

  // Per token: q and k to unit length per key head, each value head's decay and rate.
  pool.parallel_for(
      size_t(T),
      [&](size_t b, size_t e) {
        for (size_t t = b; t < e; ++t) {
          float* qk = &conv_[t * C];
          for (int h = 0; h < 2 * Hk; ++h) l2_normalize(qk + size_t(h) * dk, dk, c.rms_eps);
          for (int h = 0; h < Hv; ++h) {
            float& g = decay_[t * Hv + size_t(h)];
            g = std::exp(w.a[size_t(h)] * softplus(g + w.dt_bias[size_t(h)]));
            beta_[t * Hv + size_t(h)] = sigmoid(beta_[t * Hv + size_t(h)]);
          }
        }
      },
      1, size_t(T) * size_t(C) * 4);

  // The recurrence: each (sequence, value head) runs its tokens in order on
  // its own state matrix, the first token from state_in, then in place.
  const float scale = 1.0f / std::sqrt(float(dk));
  size_t work = 0;
  for (const auto& toks : seq_tokens) work += toks.size() * size_t(Hv) * size_t(dv) * size_t(dk) * 4;
  pool.parallel_for(
      size_t(batch.num_sequences()) * size_t(Hv),
      [&](size_t begin, size_t end) {
        for (size_t u = begin; u < end; ++u) {
          const int s = int(u / size_t(Hv)), h = int(u % size_t(Hv));
          const auto& toks = seq_tokens[size_t(s)];
          if (toks.empty()) continue;
          const StateBuffer in = batch.state_in[size_t(s)];
          const size_t mat = size_t(h) * dv * dk;
          const float* s_in = in == kNoState ? nullptr : states.matrices(in, layer) + mat;
          float* s_out = states.matrices(batch.state_out[size_t(s)], layer) + mat;
          for (size_t i = 0; i < toks.size(); ++i) {
            const size_t t = size_t(toks[i]);
            const float* row = &conv_[t * C];
            const int kh = h % Hk;  // the GGUF's tiled head order
            delta_net_step(i == 0 ? s_in : s_out, s_out, size_t(dv), size_t(dk), row + size_t(kh) * dk,
                           row + size_t(Hk + kh) * dk, row + size_t(2 * Hk) * dk + size_t(h) * dv,
                           decay_[t * Hv + size_t(h)], beta_[t * Hv + size_t(h)], scale,
                           &core_[t * V + size_t(h) * dv]);
          }
        }
      },
      1, work);

  // Each head's output RMS-normed and gated by silu(z), then projected back.
  pool.parallel_for(
      size_t(T),
      [&](size_t b, size_t e) {
        for (size_t t = b; t < e; ++t)
          for (int h = 0; h < Hv; ++h) {
            float* o = &core_[t * V + size_t(h) * dv];
            rmsnorm(o, w.norm.data(), dv, c.rms_eps, o);
            swiglu(&z_[t * V + size_t(h) * dv], o, dv);
          }
      },
      1, size_t(T) * size_t(V) * 8);
  matmul(w.out, z_.data(), T, out, pool);
}

}  // namespace pagoda
