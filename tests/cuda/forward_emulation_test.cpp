// CudaDevice's forward pass (cuda/forward_pass.h) run on the CPU against the
// CPU model, on every machine: the pass's buffers, the upload's sections, the
// shapes it hands each launcher and the order of the steps are checked where no
// GPU is. Its Ops compute on host memory with the launchers' semantics: plain
// loops (the kernels' own equivalence to them is tested kernel by kernel,
// several on their own source: host_emulation.h). F16 enters as on the GPU:
// K/V in the cache, and the weights and activations of steps over
// kGemmMinTokens tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <numeric>
#include <filesystem>
#include <random>

#include "cuda/forward_pass.h"
#include "gpu/graph_buckets.h"
#include "forward_case.h"
#include "engine/cpu_runner.h"
#include "model/moe.h"
#include "quant/dot.h"
#include "quant/rows.h"
#include "tools/synthetic.h"
#include "util/half.h"

namespace pagoda::cuda {
namespace {

// Largest |emulated - cpu| logit over the largest |cpu| logit of a row. The
// two differ by F16 K/V (and F16 weights and activations in the long step)
// here, and by the CPU's 8-bit activations (Q8_0 or Q8_K) for quantized
// weights: measured up to 0.027 (Q4_K, Q6_K). A wrong buffer, offset or
// shape moves logits by far more than the row's scale. Each case's bound is
// testing::Case::tolerance: 0.05, or tighter where its types allow.
constexpr int kHostBlock = 16, kHostBlocks = 512, kHostStateBuffers = 8;

float half_value(__half h) { return f16_to_f32(reinterpret_cast<const uint16_t&>(h)); }
__half to_half(float f) {
  const uint16_t b = f32_to_f16(f);
  return reinterpret_cast<const __half&>(b);
}

std::vector<float> decoded(TensorType t, const void* w, int64_t rows, int64_t k) {
  std::vector<float> out(size_t(rows * k));
  const size_t rb = weight_row_bytes(t, k);
  for (int64_t r = 0; r < rows; ++r)
    dequantize_row(t, static_cast<const uint8_t*>(w) + size_t(r) * rb, &out[size_t(r * k)], size_t(k));
  return out;
}

// forward_pass.h's Ops on host memory.
struct HostOps {
  int launches = 0;
  // Each K/V cache's row width (its KV page slot's): a layer narrower than its slot must be
  // given the slot's stride, or its rows overlap another group's pages in the same cache.
  std::map<const __half*, int> row_strides;
  void expect_row_stride(const __half* cache, int stride) {
    const auto it = row_strides.find(cache);
    ASSERT_TRUE(it != row_strides.end()) << "not a K/V cache";
    EXPECT_EQ(stride, it->second) << "a layer's rows at a stride not its slot's";
  }
  void embed_rows(TensorType t, const void* w, int64_t rows, int64_t k, const int32_t* ids, int n, float* out) {
    ++launches;
    const size_t rb = weight_row_bytes(t, k);
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(ids[i] >= 0 && ids[i] < rows) << ids[i];
      dequantize_row(t, static_cast<const uint8_t*>(w) + size_t(ids[i]) * rb, out + int64_t(i) * k, size_t(k));
    }
  }
  void dequantize_rows_f16(TensorType t, const void* w, int64_t rows, int64_t k, __half* out) {
    ++launches;
    const std::vector<float> f = decoded(t, w, rows, k);
    for (size_t i = 0; i < f.size(); ++i) out[i] = to_half(f[i]);
  }
  void matvec(TensorType t, const void* w, int64_t rows, int64_t k, const float* x, int n, float* out) {
    ++launches;
    ASSERT_TRUE(n >= 1 && n <= kMaxMatvecTokens);
    const std::vector<float> f = decoded(t, w, rows, k);
    for (int i = 0; i < n; ++i)
      for (int64_t r = 0; r < rows; ++r) {
        double s = 0;
        for (int64_t j = 0; j < k; ++j) s += double(f[size_t(r * k + j)]) * x[i * k + j];
        out[i * rows + r] = float(s);
      }
  }
  // mmq_quantize's contract (cuda/mmq.h): x's rows quantized into `scratch` for t's activation
  // type (kept here as floats, per scratch buffer, and quantized by the CPU's own code when
  // read); mmq_quantized's and mmvq_quantized's: the CPU's integer dot of each row and token
  // (mmq past kMaxMatvecTokens tokens, mmvq up to it); mmq and mmvq: both launches.
  struct Quantized {
    TensorType type = TensorType::F32;
    int64_t k = 0;
    int n = 0;
    std::vector<float> x;
  };
  std::map<const void*, Quantized> quantized;
  int quantize_launches = 0;
  void mmq_quantize(TensorType t, const float* x, int n, int64_t k, void* scratch, size_t bytes) {
    ++launches;
    ++quantize_launches;
    ASSERT_TRUE(mmq_supports(t) && scratch != nullptr && bytes >= mmq_scratch_bytes(n, k)) << tensor_type_name(t);
    quantized[scratch] = {activation_type(t), k, n, std::vector<float>(x, x + int64_t(n) * k)};
  }
  void mmq(TensorType t, const void* w, int64_t rows, int64_t k, const float* x, int n, float* out, void* scratch,
           size_t scratch_bytes) {
    mmq_quantize(t, x, n, k, scratch, scratch_bytes);
    mmq_quantized(t, w, rows, k, scratch, scratch_bytes, n, out);
  }
  void mmvq(TensorType t, const void* w, int64_t rows, int64_t k, const float* x, int n, float* out, void* scratch,
            size_t scratch_bytes) {
    mmq_quantize(t, x, n, k, scratch, scratch_bytes);
    mmvq_quantized(t, w, rows, k, scratch, scratch_bytes, n, out);
  }
  void mmq_quantized(TensorType t, const void* w, int64_t rows, int64_t k, const void* scratch, size_t bytes, int n,
                     float* out) {
    ASSERT_TRUE(n > kMaxMatvecTokens && n <= kMmqMaxTokens) << n;
    ++mmq_launches;
    integer_product(t, w, rows, k, scratch, bytes, n, out);
  }
  void mmvq_quantized(TensorType t, const void* w, int64_t rows, int64_t k, const void* scratch, size_t bytes, int n,
                      float* out) {
    ASSERT_TRUE(n >= 1 && n <= kMaxMatvecTokens) << n;
    ++mmvq_launches;
    integer_product(t, w, rows, k, scratch, bytes, n, out);
  }
  int mmvq_launches = 0;
  // The rows of x that `scratch` holds for weights of type t, each quantized as the CPU quantizes them.
  const Quantized& quantized_for(TensorType t, const void* scratch, int64_t k, int n) {
    static const Quantized kNone;
    const auto it = quantized.find(scratch);
    EXPECT_TRUE(it != quantized.end()) << "nothing quantized there";
    if (it == quantized.end()) return kNone;
    EXPECT_EQ(it->second.type, activation_type(t)) << tensor_type_name(t) << "'s activations quantized for another";
    EXPECT_EQ(it->second.k, k);
    EXPECT_GE(it->second.n, n);
    return it->second;
  }
  void integer_product(TensorType t, const void* w, int64_t rows, int64_t k, const void* scratch, size_t bytes, int n,
                       float* out) {
    ++launches;
    ASSERT_TRUE(mmq_supports(t)) << tensor_type_name(t);
    ASSERT_TRUE(scratch != nullptr && bytes >= mmq_scratch_bytes(n, k)) << bytes;
    const Quantized& q = quantized_for(t, scratch, k, n);
    ASSERT_EQ(q.x.size(), size_t(q.n) * size_t(k));
    std::vector<uint8_t> xq(row_bytes(q.type, size_t(k)));
    const size_t rb = weight_row_bytes(t, k);
    for (int i = 0; i < n; ++i) {
      quantize_row(q.type, q.x.data() + int64_t(i) * k, xq.data(), size_t(k));
      for (int64_t r = 0; r < rows; ++r)
        out[i * rows + r] = vec_dot_scalar(t, static_cast<const uint8_t*>(w) + size_t(r) * rb, xq.data(), size_t(k));
    }
  }
  int mmq_launches = 0;
  void convert_f32_to_f16(const float* x, __half* out, int64_t n) {
    ++launches;
    for (int64_t i = 0; i < n; ++i) out[i] = to_half(x[i]);
  }
  void gemm_f16(const __half* x, const __half* w, float* out, int n_tokens, int rows, int k) {
    ++launches;
    for (int t = 0; t < n_tokens; ++t)
      for (int r = 0; r < rows; ++r) {
        double s = 0;
        for (int j = 0; j < k; ++j) s += double(half_value(x[int64_t(t) * k + j])) * half_value(w[int64_t(r) * k + j]);
        out[int64_t(t) * rows + r] = float(s);
      }
  }
  void rms_norm(const float* x, const float* w, float* out, int n_rows, int n, float eps) {
    ++launches;
    for (int t = 0; t < n_rows; ++t) {
      double ss = 0;
      for (int i = 0; i < n; ++i) ss += double(x[int64_t(t) * n + i]) * x[int64_t(t) * n + i];
      const float inv = float(1 / std::sqrt(ss / n + eps));
      for (int i = 0; i < n; ++i) out[int64_t(t) * n + i] = x[int64_t(t) * n + i] * inv * (w ? w[i] : 1.0f);
    }
  }
  void add_bias(float* y, const float* b, int n_rows, int n) {
    ++launches;
    for (int64_t i = 0; i < int64_t(n_rows) * n; ++i) y[i] += b[i % n];
  }
  void rope(float* x, const int32_t* pos, int n_tokens, int n_heads, int head_dim, const RopeParams& p) {
    ++launches;
    for (int t = 0; t < n_tokens; ++t)
      for (int h = 0; h < n_heads; ++h) {
        float* v = x + (int64_t(t) * n_heads + h) * head_dim;
        for (int i = 0; i < p.n_rot / 2; ++i) {
          double theta = pos[t] * std::pow(double(p.freq_base), -2.0 * i / p.n_rot);
          if (p.freq_factors) theta /= p.freq_factors[i];
          theta /= p.linear_factor;
          if (p.yarn_factor > 0) {
            const double e = 1 - std::clamp((i - p.yarn_low) / std::max(0.001, p.yarn_high - p.yarn_low), 0.0, 1.0);
            theta *= (1 - e) / p.yarn_factor + e;
          }
          const int a = p.style == RopeStyle::kNeox ? i : 2 * i,
                    b = p.style == RopeStyle::kNeox ? i + p.n_rot / 2 : a + 1;
          const double x0 = v[a], x1 = v[b];
          v[a] = float((x0 * std::cos(theta) - x1 * std::sin(theta)) * p.mscale);
          v[b] = float((x0 * std::sin(theta) + x1 * std::cos(theta)) * p.mscale);
        }
      }
  }
  void store_kv(const float* k, const float* v, const int32_t* slots, int n, int kv_dim, int row_stride, __half* kc,
                __half* vc) {
    ++launches;
    ASSERT_GE(row_stride, kv_dim);
    expect_row_stride(kc, row_stride);
    expect_row_stride(vc, row_stride);
    for (int t = 0; t < n; ++t) {
      ASSERT_TRUE(slots[t] >= -1 && slots[t] < kHostBlocks * kHostBlock) << slots[t];
      if (slots[t] < 0) continue;  // as the kernel: a token stored nowhere (a graph's padding)
      for (int j = 0; j < kv_dim; ++j) {
        kc[int64_t(slots[t]) * row_stride + j] = to_half(k[int64_t(t) * kv_dim + j]);
        vc[int64_t(slots[t]) * row_stride + j] = to_half(v[int64_t(t) * kv_dim + j]);
      }
    }
  }
  // As attention.h's contract: token t attends positions 0..pos[t] of its sequence (with a window,
  // the last sliding_window of them), K and V of position p in block tables[seq * stride + p /
  // block_size], slot p % block_size.
  void paged_attention(const PagedAttentionArgs& a) {
    ++launches;
    const int64_t stride = a.seq_table_stride ? a.seq_table_stride : a.max_blocks_per_seq;
    const int kv_dim = a.kv_stride > 0 ? a.kv_stride : a.n_kv_head * a.head_dim, group = a.n_head / a.n_kv_head;
    expect_row_stride(a.k_cache, kv_dim);
    expect_row_stride(a.v_cache, kv_dim);
    EXPECT_NE(a.split_scratch, nullptr) << "a long context at batch 1 could not split";
    for (int t = 0; t < a.n_tokens; ++t) {
      const int32_t* table = a.block_tables + a.seq_index[t] * stride;
      for (int h = 0; h < a.n_head; ++h) {
        const float* q = a.q + (int64_t(t) * a.n_head + h) * a.head_dim;
        const int first = a.sliding_window > 0 ? std::max(0, a.positions[t] - a.sliding_window + 1) : 0;
        std::vector<double> score(size_t(a.positions[t]) + 1, -INFINITY);  // before the window: weight 0
        double top = -INFINITY, sum = 0;
        auto at = [&](const __half* cache, int p, int i) -> double {
          EXPECT_LT(p / a.block_size, a.max_blocks_per_seq);
          EXPECT_GE(table[p / a.block_size], 0) << "position " << p << " in a block given back";
          const int64_t slot = int64_t(table[p / a.block_size]) * a.block_size + p % a.block_size;
          return half_value(cache[slot * kv_dim + (h / group) * a.head_dim + i]);
        };
        for (int p = first; p <= a.positions[t]; ++p) {
          double s = 0;
          for (int i = 0; i < a.head_dim; ++i) s += double(q[i]) * at(a.k_cache, p, i);
          score[size_t(p)] = a.softcap > 0 ? a.softcap * std::tanh(s * a.scale / a.softcap) : s * a.scale;
          top = std::max(top, score[size_t(p)]);
        }
        const double sink = a.sinks ? a.sinks[h] : -INFINITY;  // joins the sum only
        top = std::max(top, sink);
        sum = std::exp(sink - top);
        for (double& s : score) sum += (s = std::exp(s - top));
        float* out = a.out + (int64_t(t) * a.n_head + h) * a.head_dim;
        for (int i = 0; i < a.head_dim; ++i) {
          double o = 0;
          for (int p = first; p <= a.positions[t]; ++p) o += score[size_t(p)] / sum * at(a.v_cache, p, i);
          out[i] = float(o);
        }
      }
    }
  }
  void add(float* y, const float* x, int64_t n) {
    ++launches;
    for (int64_t i = 0; i < n; ++i) y[i] += x[i];
  }
  void swiglu(const float* g, const float* u, float* out, int64_t n) {
    ++launches;
    for (int64_t i = 0; i < n; ++i) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  }
  void geglu_tanh(const float* g, const float* u, float* out, int64_t n) {
    ++launches;
    for (int64_t i = 0; i < n; ++i)
      out[i] = float(0.5 * g[i] * (1 + std::tanh(0.7978845608028654 * (g[i] + 0.044715 * double(g[i]) * g[i] * g[i]))) *
                     u[i]);
  }
  void swiglu_oai(const float* g, const float* u, float* out, int64_t n) {
    ++launches;
    for (int64_t i = 0; i < n; ++i) {
      const double gc = std::min(g[i], 7.0f), uc = std::clamp(u[i], -7.0f, 7.0f);
      out[i] = float(gc / (1 + std::exp(-1.702 * gc)) * (uc + 1));
    }
  }
  // moe.h's contracts: route_tokens itself; the slots sorted by expert and cut into tiles.
  void moe_route(const float* logits, int n, const MoeRouting& r, int32_t* experts, float* weights) {
    ++launches;
    const MoeSpec spec{.n_expert = r.n_expert,
                       .n_used = r.n_used,
                       .gating = r.softmax_first ? ExpertGating::SoftmaxTopK : ExpertGating::TopKSoftmax,
                       .normalize = r.normalize,
                       .scale = r.scale};
    std::vector<ExpertChoice> choices(size_t(n) * size_t(r.n_used));
    route_tokens(spec, logits, n, choices.data());
    for (size_t i = 0; i < choices.size(); ++i) experts[i] = choices[i].expert, weights[i] = choices[i].weight;
  }
  void moe_group(const int32_t* experts, int n_slots, int n_expert, int tile_slots, int32_t* order, ExpertTile* tiles,
                 int max_tiles) {
    ++launches;
    ASSERT_GE(max_tiles, max_expert_tiles(n_slots, n_expert, tile_slots));
    std::iota(order, order + n_slots, 0);
    std::stable_sort(order, order + n_slots, [&](int a, int b) { return experts[a] < experts[b]; });
    int n_tiles = 0;
    for (int i = 0; i < n_slots; ++n_tiles) {
      int j = i;
      while (j < n_slots && j - i < tile_slots && experts[order[j]] == experts[order[i]]) ++j;
      tiles[n_tiles] = {experts[order[i]], i, j - i};
      i = j;
    }
    std::fill(tiles + n_tiles, tiles + max_tiles, ExpertTile{});
  }
  void matvec_experts(const ExpertStack& w, const float* x, int x_per_slot, const int32_t* order,
                      const ExpertTile* tiles, int max_tiles, float* out) {
    ++launches;
    const size_t expert_bytes = w.stride > 0 ? size_t(w.stride) : size_t(w.rows) * weight_row_bytes(w.type, w.cols);
    for (int i = 0; i < max_tiles; ++i) {
      const ExpertTile& tile = tiles[i];
      ASSERT_TRUE(tile.count >= 0 && tile.count <= kExpertTileSlots && tile.expert >= 0 && tile.expert < w.n_expert);
      if (tile.count == 0) continue;
      const std::vector<float> f =
          decoded(w.type, static_cast<const uint8_t*>(w.data) + size_t(tile.expert) * expert_bytes, w.rows, w.cols);
      for (int t = 0; t < tile.count; ++t) {
        const int slot = order[tile.first + t];
        const float* xs = x + int64_t(slot / x_per_slot) * w.cols;
        for (int64_t r = 0; r < w.rows; ++r) {
          double s = 0;
          for (int64_t j = 0; j < w.cols; ++j) s += double(f[size_t(r * w.cols + j)]) * xs[j];
          out[slot * w.rows + r] = float(s);
        }
      }
    }
  }
  void mmq_experts(const ExpertStack& w, const void* scratch, size_t bytes, int n_x_rows, int x_per_slot,
                   const int32_t* order, const ExpertTile* tiles, int max_tiles, float* out) {
    ++mmq_expert_launches;
    integer_experts(w, scratch, bytes, n_x_rows, x_per_slot, order, tiles, max_tiles, out, kMmqExpertSlots);
  }
  // mmvq_experts': the same for matvec_experts' tiles of up to 8 slots.
  void mmvq_experts(const ExpertStack& w, const void* scratch, size_t bytes, int n_x_rows, int x_per_slot,
                    const int32_t* order, const ExpertTile* tiles, int max_tiles, float* out) {
    ++mmvq_expert_launches;
    integer_experts(w, scratch, bytes, n_x_rows, x_per_slot, order, tiles, max_tiles, out, kExpertTileSlots);
  }
  int mmvq_expert_launches = 0;
  void integer_experts(const ExpertStack& w, const void* scratch, size_t bytes, int n_x_rows, int x_per_slot,
                       const int32_t* order, const ExpertTile* tiles, int max_tiles, float* out, int tile_slots) {
    ++launches;
    ASSERT_TRUE(scratch != nullptr && bytes >= mmq_scratch_bytes(n_x_rows, w.cols));
    const Quantized& q = quantized_for(w.type, scratch, w.cols, n_x_rows);
    ASSERT_EQ(q.x.size(), size_t(n_x_rows) * size_t(w.cols));
    const size_t rb = weight_row_bytes(w.type, w.cols), expert_bytes = w.stride > 0 ? size_t(w.stride) : w.rows * rb;
    std::vector<uint8_t> xq(row_bytes(q.type, size_t(w.cols)));
    for (int i = 0; i < max_tiles; ++i) {
      ASSERT_TRUE(tiles[i].count >= 0 && tiles[i].count <= tile_slots);
      for (int t = 0; t < tiles[i].count; ++t) {
        const int slot = order[tiles[i].first + t];
        ASSERT_LT(slot / x_per_slot, n_x_rows);
        quantize_row(q.type, &q.x[size_t(slot / x_per_slot) * size_t(w.cols)], xq.data(), size_t(w.cols));
        const uint8_t* e = static_cast<const uint8_t*>(w.data) + size_t(tiles[i].expert) * expert_bytes;
        for (int64_t r = 0; r < w.rows; ++r)
          out[int64_t(slot) * w.rows + r] = vec_dot_scalar(w.type, e + size_t(r) * rb, xq.data(), size_t(w.cols));
      }
    }
  }
  int mmq_expert_launches = 0;
  void add_expert_bias(float* y, const float* bias, const int32_t* experts, int n_slots, int n) {
    ++launches;
    for (int s = 0; s < n_slots; ++s)
      for (int i = 0; i < n; ++i) y[int64_t(s) * n + i] += bias[int64_t(experts[s]) * n + i];
  }
  void moe_combine(const float* y, const int32_t* experts, const float* weights, const float* scale, int n_tokens,
                   int n_used, int n, float* out) {
    ++launches;
    ++moe_launches;
    for (int t = 0; t < n_tokens; ++t)
      for (int i = 0; i < n; ++i) {
        double o = 0;
        for (int r = 0; r < n_used; ++r) {
          const int s = t * n_used + r;
          o += double(weights[s]) * y[int64_t(s) * n + i] * (scale ? scale[experts[s]] : 1.0f);
        }
        out[int64_t(t) * n + i] = float(o);
      }
  }
  int moe_launches = 0;
  void row_dot(const float* x, const float* w, int n_tokens, int n, float* logit) {
    ++launches;
    for (int t = 0; t < n_tokens; ++t) {
      double s = 0;
      for (int i = 0; i < n; ++i) s += double(w[i]) * x[int64_t(t) * n + i];
      logit[t] = float(s);
    }
  }
  void add_gated(float* out, const float* y, const float* logit, int n_tokens, int n) {
    ++launches;
    for (int64_t i = 0; i < int64_t(n_tokens) * n; ++i) out[i] += float(y[i] / (1 + std::exp(-double(logit[i / n]))));
  }
  // delta_net.h's contracts.
  void split_query_gate(const float* qg, int n, int n_head, int hd, float* q, float* gate) {
    ++launches;
    for (int64_t h = 0; h < int64_t(n) * n_head; ++h) {
      std::copy_n(qg + h * 2 * hd, hd, q + h * hd);
      std::copy_n(qg + h * 2 * hd + hd, hd, gate + h * hd);
    }
  }
  void sigmoid_gate(float* x, const float* gate, int64_t n) {
    ++launches;
    for (int64_t i = 0; i < n; ++i) x[i] = float(x[i] / (1 + std::exp(-double(gate[i]))));
  }
  void sequence_ranges(const int32_t* seq_of, int n, int32_t* first, int32_t* end) {
    ++launches;
    for (int t = 0; t < n; ++t) {
      if (t == 0 || seq_of[t - 1] != seq_of[t]) first[seq_of[t]] = t;
      end[seq_of[t]] = t + 1;
    }
  }
  void delta_conv(const float* mixed, const float* w, int K, int C, int n, const DeltaStates& st, float* out) {
    ++delta_launches;
    for (int t = 0; t < n; ++t) {
      const int s = st.seq_of[t], first = st.first[s], count = st.end[s] - first, i = t - first;
      const float* in = st.in[s] < 0 ? nullptr : st.layer + int64_t(st.in[s]) * st.buffer_floats;
      auto input = [&](int j, int c) -> double {
        if (j >= K - 1) return mixed[int64_t(first + j - (K - 1)) * C + c];
        return in ? in[int64_t(j) * C + c] : 0.0;
      };
      for (int c = 0; c < C; ++c) {
        double y = 0;
        for (int tap = 0; tap < K; ++tap) y += double(w[int64_t(tap) * C + c]) * input(i + tap, c);
        out[int64_t(t) * C + c] = float(y / (1 + std::exp(-y)));
        if (i == count - 1 && st.out[s] >= 0)
          for (int j = 0; j < K - 1; ++j)
            st.layer[int64_t(st.out[s]) * st.buffer_floats + int64_t(j) * C + c] = float(input(count + j, c));
      }
    }
  }
  void delta_prepare(float* conv, int C, int hk, int dk, float eps, float* decay, float* beta, const float* a,
                     const float* dt_bias, int hv, int n) {
    ++launches;
    for (int t = 0; t < n; ++t) {
      for (int h = 0; h < 2 * hk; ++h) {
        float* x = conv + int64_t(t) * C + int64_t(h) * dk;
        double ss = 0;
        for (int i = 0; i < dk; ++i) ss += double(x[i]) * x[i];
        for (int i = 0; i < dk; ++i) x[i] = float(x[i] / std::sqrt(ss + eps));
      }
      for (int h = 0; h < hv; ++h) {
        const double g = double(decay[t * hv + h]) + dt_bias[h];
        decay[t * hv + h] = float(std::exp(a[h] * (g > 20 ? g : std::log1p(std::exp(g)))));
        beta[t * hv + h] = float(1 / (1 + std::exp(-double(beta[t * hv + h]))));
      }
    }
  }
  void delta_rule(const float* conv, int C, int hk, int hv, int dk, int dv, const float* decay, const float* beta,
                  float scale, int n_seqs, const DeltaStates& st, int64_t conv_floats, float* core) {
    ++launches;
    std::vector<double> S(size_t(dv) * size_t(dk));
    for (int s = 0; s < n_seqs; ++s)
      for (int h = 0; h < hv; ++h) {
        const int64_t at = conv_floats + int64_t(h) * dv * dk;
        for (size_t i = 0; i < S.size(); ++i)
          S[i] = st.in[s] < 0 ? 0.0 : st.layer[int64_t(st.in[s]) * st.buffer_floats + at + int64_t(i)];
        for (int t = st.first[s]; t < st.end[s]; ++t) {
          const float* q = conv + int64_t(t) * C + int64_t(h % hk) * dk;
          const float* k = q + int64_t(hk) * dk;
          const float* v = conv + int64_t(t) * C + 2 * int64_t(hk) * dk + int64_t(h) * dv;
          for (int j = 0; j < dv; ++j) {
            double* row = &S[size_t(j) * size_t(dk)];
            double sk = 0, sq = 0;
            for (int i = 0; i < dk; ++i) sk += (row[i] *= decay[t * hv + h]) * k[i];
            const double d = beta[t * hv + h] * (v[j] - sk);
            for (int i = 0; i < dk; ++i) sq += (row[i] += d * k[i]) * q[i];
            core[int64_t(t) * hv * dv + int64_t(h) * dv + j] = float(scale * sq);
          }
        }
        if (st.out[s] >= 0)
          for (size_t i = 0; i < S.size(); ++i)
            st.layer[int64_t(st.out[s]) * st.buffer_floats + at + int64_t(i)] = float(S[i]);
      }
  }
  int delta_launches = 0;
  void blend(float* x, const float* y, float a, float b, int64_t n) {
    ++launches;
    for (int64_t i = 0; i < n; ++i) x[i] = float((double(x[i]) + double(y[i]) * a) * b);
  }
  void gelu_times(float* g, const float* in, int n_tokens, int n, int64_t stride) {
    ++launches;
    for (int t = 0; t < n_tokens; ++t)
      for (int i = 0; i < n; ++i) {
        const double x = g[int64_t(t) * n + i];
        g[int64_t(t) * n + i] =
            float(0.5 * x * (1 + std::tanh(0.7978845608028654 * x * (1 + 0.044715 * x * x))) * in[t * stride + i]);
      }
  }
  void copy(float* dst, const float* src, int64_t n) {
    ++launches;
    std::copy_n(src, n, dst);
  }
  void scale(float* x, float s, int64_t n) {
    ++launches;
    for (int64_t i = 0; i < n; ++i) x[i] *= s;
  }
  void query_temperature(float* x, const int32_t* pos, int n_tokens, int n, float temperature, int floor) {
    ++launches;
    for (int t = 0; t < n_tokens; ++t)
      for (int i = 0; i < n; ++i)
        x[int64_t(t) * n + i] *= float(1 + temperature * std::log(std::floor(double(pos[t]) / floor) + 1));
  }
  void scale_softcap(float* x, float s, float cap, int64_t n) {
    ++launches;
    for (int64_t i = 0; i < n; ++i) x[i] = cap > 0 ? float(cap * std::tanh(double(x[i] * s) / cap)) : x[i] * s;
  }
  void gather_rows(const float* in, const int32_t* idx, int n_out, int64_t n, float* out) {
    ++launches;
    for (int i = 0; i < n_out; ++i) std::copy_n(in + idx[i] * n, n, out + i * n);
  }
};

// A model's pass on the host: its weights in place, caches and buffers as host vectors.
struct HostDevice {
  // KV groups by window (kv_groups_of), or one of every layer.
  HostDevice(const Model& model, int max_tokens, int max_logits, int state_buffers = kHostStateBuffers,
             bool by_window = false)
      : m(place_model(model, [](const void* host, size_t) { return host; })), state_buffers(state_buffers) {
    const ModelConfig& c = m.cfg;
    place_kv_groups(m, kv_groups_of(c, by_window));
    for (int dim : m.kv_slot_dims) {  // NaN: a read of what no step wrote shows in the logits
      k.emplace_back(size_t(kHostBlocks) * kHostBlock * size_t(dim), to_half(NAN));
      v.emplace_back(size_t(kHostBlocks) * kHostBlock * size_t(dim), to_half(NAN));
      m.k_cache.push_back(k.back().data());
      m.v_cache.push_back(v.back().data());
      ops.row_strides[m.k_cache.back()] = ops.row_strides[m.v_cache.back()] = dim;
    }
    m.block_size = kHostBlock;
    const size_t T = size_t(max_tokens), L = size_t(max_logits), wide = size_t(m.widest_input);
    auto take = [this](size_t n) { return floats.emplace_back(n, NAN).data(); };
    b = {.x = take(T * c.n_embd),
         .h = take(T * c.n_embd),
         .q = take(T * c.max_q_dim()),
         .attn = take(T * c.max_q_dim()),
         .attn_split = take(kAttentionSplitScratchFloats),
         .k = take(T * c.max_kv_dim()),
         .v = take(T * c.max_kv_dim()),
         .gate = take(T * c.max_n_ff()),
         .up = take(T * c.max_n_ff()),
         .xl = take(L * c.n_embd),
         .logits = take(L * c.n_vocab)};
    if (const MoeSpec& e = c.moe; e.n_expert > 0) {
      const size_t slots = std::min<size_t>(T, kMoeChunkTokens) * size_t(e.n_used);
      b.router_logits = take(T * size_t(e.n_expert));
      ids.resize(slots, -1);
      order.resize(slots, -1);
      tiles.resize(size_t(max_expert_tiles(int(slots), e.n_expert)));
      b.expert_ids = ids.data();
      b.expert_order = order.data();
      b.expert_tiles = tiles.data();
      b.expert_weights = take(slots);
      b.expert_gate = take(slots * size_t(e.n_ff));
      b.expert_up = take(slots * size_t(e.n_ff));
      b.expert_out = take(slots * size_t(c.n_embd));
      expert_scratch.resize(
          std::max(mmq_scratch_bytes(int(slots) / e.n_used, c.n_embd), mmq_scratch_bytes(int(slots), e.n_ff)));
      b.expert_scratch = expert_scratch.data();
      b.expert_scratch_bytes = expert_scratch.size();
      if (e.dense_beside) {
        b.beside_in = take(T * size_t(c.n_embd));
        b.beside_router = take(T * size_t(c.n_embd));
        b.beside_out = take(T * size_t(c.n_embd));
      }
      if (e.n_ff_shared > 0) {
        b.shexp_gate = take(T * size_t(e.n_ff_shared));
        b.shexp_up = take(T * size_t(e.n_ff_shared));
        b.shexp_out = take(T * size_t(c.n_embd));
        b.shexp_logit = take(T);
      }
    }
    if (c.attn_output_gate) {
      b.qg = take(2 * T * c.max_q_dim());
      b.attn_gate = take(T * c.max_q_dim());
    }
    if (const DeltaNetSpec& d = c.delta_net; c.n_recurrent_layers() > 0) {
      b.mixed = take(T * size_t(d.conv_channels()));
      b.conv = take(T * size_t(d.conv_channels()));
      b.z = take(T * size_t(d.n_v_heads * d.head_v_dim));
      b.core = take(T * size_t(d.n_v_heads * d.head_v_dim));
      b.beta = take(T * size_t(d.n_v_heads));
      b.decay = take(T * size_t(d.n_v_heads));
      ranges.resize(2 * T, -1);
      b.seq_first = ranges.data();
      b.seq_end = ranges.data() + T;
      // Garbage, not zeros: a buffer is written whole before it is read, and kNoState reads none.
      state_pool.assign(size_t(state_buffers) * size_t(m.state_buffer_floats), NAN);
      m.states = state_pool.data();
    }
    if (const size_t P = size_t(c.n_embd_per_layer); P > 0) {
      b.pl = take(T * size_t(c.n_layer) * P);
      b.pl_tok = take(T * size_t(c.n_layer) * P);
      b.pl_gate = take(T * P);
    }
    halves.emplace_back(T * wide);
    b.x16 = halves.back().data();
    halves.emplace_back(size_t(m.largest_layer_matrix));
    b.w16 = halves.back().data();
    mmq_bytes.resize(mmq_scratch_bytes(int(std::min<size_t>(T, kMmqMaxTokens)), int64_t(wide)));
    b.mmq_scratch = mmq_bytes.data();
    b.mmq_scratch_bytes = mmq_bytes.size();
  }
  std::vector<float> forward(const Batch& batch) {
    return run(gpu::StepUpload::pack(batch, kHostBlock, kHostBlocks, {}, 0, state_buffers));
  }
  std::vector<float> run(const gpu::StepUpload& u) {
    forward_pass(ops, m, b, u, u.words().data());
    return {b.logits, b.logits + int64_t(u.num_logits()) * m.cfg.n_vocab};
  }
  ModelOnDevice m;
  StepBuffers b;
  HostOps ops;
  std::vector<std::vector<__half>> k, v, halves;
  std::vector<std::vector<float>> floats;
  std::vector<uint8_t> mmq_bytes;
  std::vector<int32_t> ids, order, ranges;
  std::vector<uint8_t> expert_scratch;
  std::vector<ExpertTile> tiles;
  std::vector<float> state_pool;
  int state_buffers;
};

// Each case in one KV group of every layer, and a model with sliding windows
// also in its groups by window (the default, as the CPU engine's): each group
// its own pages, a sliding group's given back behind its window (kNoBlock,
// which the emulated attention refuses to read).
TEST(CudaForwardOnHost, LogitsMatchTheCpuModelForEachTypeAndArchitecture) {
  for (const testing::Case& c : testing::forward_cases()) {
    auto model = testing::load_synthetic(c.spec, c.name);
    const bool windows = kv_groups_of(model->config(), true).num_groups() > 1;
    for (const bool by_window : {false, true}) {
      if (by_window && !windows) continue;
      SCOPED_TRACE(c.name + (by_window ? " in KV groups" : ""));
      const KvGroups groups = kv_groups_of(model->config(), by_window);
      HostDevice gpu(*model, 64, 8, kHostStateBuffers, by_window);
      // A hybrid's three sequences each a state slot.
      const bool hybrid = model->config().n_recurrent_layers() > 0;
      CpuRunner cpu(model, groups, kHostBlocks, kHostBlock, KvType::F32, 1, hybrid ? kHostStateBuffers / 2 : 0);
      std::vector<std::vector<int32_t>> tables;
      const std::vector<Batch> batches =
          testing::forward_steps(model->config().n_vocab, tables, hybrid, groups.windows);
      for (size_t i = 0; i < batches.size(); ++i) {
        std::vector<float> want;
        cpu.forward(batches[i], want);
        const std::vector<float> got = gpu.forward(batches[i]);
        ASSERT_EQ(got.size(), want.size()) << "step " << i;
        const double err = testing::worst_row_error(got, want, model->config().n_vocab);
        EXPECT_LT(err, c.tolerance) << "step " << i;
        std::printf("[ %s%s step %zu ] worst row error %.5f\n", c.name.c_str(), by_window ? " in KV groups" : "", i,
                    err);
      }
      if (by_window) continue;  // the launch counts below, once a case
      EXPECT_GT(gpu.ops.launches, 0);
      // The 61-token step's matrices: mmq's formats through it, the others through cuBLAS.
      EXPECT_EQ(gpu.ops.mmq_launches > 0, mmq_supports(c.spec.type)) << gpu.ops.mmq_launches;
      // The 3-token decode steps' matrices: mmq's formats through mmvq.
      EXPECT_EQ(gpu.ops.mmvq_launches > 0, mmq_supports(c.spec.type)) << gpu.ops.mmvq_launches;
      // One quantization of a layer's input serves q, k and v, and gate and up: fewer than the products.
      if (mmq_supports(c.spec.type)) EXPECT_LT(gpu.ops.quantize_launches, gpu.ops.mmq_launches + gpu.ops.mmvq_launches);
      EXPECT_EQ(gpu.ops.moe_launches > 0, c.spec.n_expert > 0) << gpu.ops.moe_launches;
      // The 61-token step's experts through tensor-core tiles where their format takes them,
      // the decode steps' through mmvq's.
      const bool int8_experts = c.spec.n_expert > 0 && mmq_supports(c.spec.expert_type.value_or(c.spec.type));
      EXPECT_EQ(gpu.ops.mmq_expert_launches > 0, int8_experts) << gpu.ops.mmq_expert_launches;
      EXPECT_EQ(gpu.ops.mmvq_expert_launches > 0, int8_experts) << gpu.ops.mmvq_expert_launches;
      EXPECT_EQ(gpu.ops.delta_launches > 0, hybrid) << gpu.ops.delta_launches;
    }
  }
}

// A CUDA graph's padded decode step (gpu/graph_buckets.h) against the same
// step unpadded, on two devices with the same caches: the real rows' logits
// and every cache byte identical (padding writes no K/V), for buckets of 8
// (matvec), 32 and 64 (mmq, Q8_0's path past 8 tokens), on scattered tables.
// A hybrid's too: each real sequence reads state buffer 2s and writes 2s + 1,
// the padding reads none and writes none, so the pools end identical.
TEST(CudaForwardOnHost, APaddedDecodeStepGivesTheRealRowsTheUnpaddedLogits) {
  const std::vector<testing::Case> cases = testing::forward_cases();
  auto named = [&](const std::string& name) {
    return *std::find_if(cases.begin(), cases.end(), [&](const testing::Case& x) { return x.name == name; });
  };
  // Q8_0, a hybrid, and gemma3 in its KV groups (a table per group, the sliding ones' behind
  // their windows empty).
  for (const auto& [c, by_window] : std::vector<std::pair<testing::Case, bool>>{
           {cases[1], false}, {named("qwen35"), false}, {named("gemma3"), true}}) {
    SCOPED_TRACE(c.name + (by_window ? " in KV groups" : ""));
    auto model = testing::load_synthetic(c.spec, c.name);
    const int V = model->config().n_vocab;
    const bool hybrid = model->config().n_recurrent_layers() > 0;
    const KvGroups groups = kv_groups_of(model->config(), by_window);
    const int G = groups.num_groups();
    std::mt19937 rng(17);
    for (const auto& [real, bucket] : std::vector<std::pair<int, int>>{{5, 8}, {20, 32}, {40, 64}}) {
      SCOPED_TRACE(bucket);
      HostDevice plain(*model, 64, 64, 2 * real, by_window), padded(*model, 64, 64, 2 * real, by_window);
      for (size_t l = 0; l < plain.k.size(); ++l)  // earlier positions' K/V: finite, the same in both
        for (auto* cache : {&plain.k[l], &plain.v[l]})
          for (__half& h : *cache) h = to_half(std::uniform_real_distribution<float>(-1, 1)(rng));
      for (size_t l = 0; l < plain.k.size(); ++l) {  // in place: the model's cache pointers stay
        std::copy(plain.k[l].begin(), plain.k[l].end(), padded.k[l].begin());
        std::copy(plain.v[l].begin(), plain.v[l].end(), padded.v[l].begin());
      }
      for (float& f : plain.state_pool) f = std::uniform_real_distribution<float>(-0.3f, 0.3f)(rng);
      std::copy(plain.state_pool.begin(), plain.state_pool.end(), padded.state_pool.begin());
      std::vector<int32_t> blocks(kHostBlocks);
      std::iota(blocks.begin(), blocks.end(), 0);
      std::shuffle(blocks.begin(), blocks.end(), rng);  // scattered, out of order
      std::vector<std::vector<int32_t>> tables(size_t(real) * size_t(G));
      Batch batch;
      batch.num_groups = G;
      for (int s = 0, next = 0; s < real; ++s) {
        const int len = 1 + int(rng() % 3), pos = len * kHostBlock - 1 - int(rng() % kHostBlock);
        std::vector<std::span<const int32_t>> own;
        for (int g = 0; g < G; ++g) {
          std::vector<int32_t>& t = tables[size_t(s * G + g)];
          t.assign(size_t(blocks_behind_window(groups.windows[size_t(g)], pos, kHostBlock)), kNoBlock);
          ASSERT_LE(next + len - int(t.size()), kHostBlocks);
          while (int(t.size()) < len) t.push_back(blocks[size_t(next++)]);
          own.push_back(t);
        }
        batch.add_sequence(own, uint64_t(s));
        if (hybrid) batch.set_state(s, 2 * s, 2 * s + 1);
        batch.add(int32_t(rng() % uint32_t(V)), s, pos, true);
      }
      const int buffers = hybrid ? 2 * real : 0;
      const gpu::StepUpload u = gpu::StepUpload::pack(batch, kHostBlock, kHostBlocks, {}, 0, buffers);
      const gpu::GraphKey key = gpu::graph_key(u, 4);
      ASSERT_EQ(key.tokens, bucket);
      const gpu::StepUpload p = gpu::pad_for_graph(u, key, kHostBlocks, buffers);
      const std::vector<float> want = plain.run(u), got = padded.run(p);
      ASSERT_EQ(got.size(), size_t(bucket) * size_t(V));
      const std::vector<float> real_rows(got.begin(), got.begin() + int64_t(real) * V);
      EXPECT_EQ(real_rows, want);
      EXPECT_LT(testing::worst_row_error(want, want, V), 1e-12);  // finite: the comparison above means something
      for (size_t l = 0; l < plain.k.size(); ++l) {
        EXPECT_TRUE(std::memcmp(plain.k[l].data(), padded.k[l].data(), plain.k[l].size() * sizeof(__half)) == 0);
        EXPECT_TRUE(std::memcmp(plain.v[l].data(), padded.v[l].data(), plain.v[l].size() * sizeof(__half)) == 0);
      }
      EXPECT_TRUE(
          std::memcmp(plain.state_pool.data(), padded.state_pool.data(), plain.state_pool.size() * sizeof(float)) == 0);
    }
  }
}

}  // namespace
}  // namespace pagoda::cuda
