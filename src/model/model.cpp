#include "model/model.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <type_traits>

#include "kernels/attention.h"
#include "kernels/float_matmul.h"
#include "model/ops.h"
#include "model/per_layer_inputs.h"
#include "quant/rows.h"
#include "util/error.h"
#include "util/half.h"

namespace pagoda {

std::unique_ptr<Model> Model::load(const std::string& path, Residency residency, const LoadProgress& progress) {
  return std::make_unique<Model>(std::make_shared<const GgufFile>(GgufFile::open(path, residency, progress)), progress);
}

Model::Model(std::shared_ptr<const GgufFile> file, const LoadProgress& progress)
    : file_(std::move(file)), cfg_(ModelConfig::from_gguf(*file_)), w_(ModelWeights::load(*file_, cfg_)) {
  for (const LayerSpec& l : cfg_.layers) ropes_.emplace_back(l.rope, l.head_dim, w_.rope_freq_factors);
  w_.pack_panels(*file_, progress);
}

bool Model::move_into_memory(WeightMover::Options options) {
  if (mover_) fail<InvalidArgument>("the model's weights are already moving into memory");
  const size_t available = available_memory_bytes();
  if (available != 0 && WeightMover::arena_bytes(w_) + (size_t(256) << 20) > available) return false;
  mover_ = std::make_unique<WeightMover>(w_, file_, std::move(options));
  return true;
}

void Model::check(const Batch& batch, const KvStorage& kv, const StateStorage* states) {
  if (kv.groups().num_layers() != cfg_.n_layer) fail<InvalidArgument>("KV storage was made for another model");
  for (int l = 0; l < cfg_.n_layer; ++l) {
    const LayerSpec& s = cfg_.layers[size_t(l)];
    if (s.has_kv() != (kv.group_of(l) != kNoKv) || (s.has_kv() && kv.kv_stride(l) < s.kv_dim()))
      fail<InvalidArgument>("KV storage was made for another model (layer {})", l);
  }
  if (batch.num_groups != kv.num_groups())
    fail<InvalidArgument>("batch of {} KV groups for a storage of {}", batch.num_groups, kv.num_groups());
  const int bs = kv.block_size();
  if (batch.block_tables.size() != size_t(batch.num_sequences()) * size_t(batch.num_groups))
    fail<InvalidArgument>("batch holds {} block tables for {} sequences", batch.block_tables.size(),
                          batch.num_sequences());
  for (const auto& table : batch.block_tables)
    for (int32_t b : table)
      if (b != kNoBlock && (b < 0 || b >= kv.num_blocks()))
        fail<InvalidArgument>("block id {} outside the KV pool of {} blocks", b, kv.num_blocks());
  // Per sequence, the positions its tokens write and read: [first read, last].
  std::vector<std::pair<int, int>> span(size_t(batch.num_sequences()), {INT32_MAX, -1});
  std::vector<int> count(size_t(batch.num_sequences()));
  for (const auto& t : batch.tokens) {
    if (t.token < 0 || t.token >= cfg_.n_vocab)
      fail<InvalidArgument>("token id {} outside the vocabulary of {}", t.token, cfg_.n_vocab);
    if (t.seq < 0 || t.seq >= batch.num_sequences())
      fail<InvalidArgument>("batch token names sequence {} of {}", t.seq, batch.num_sequences());
    if (t.pos < 0) fail<InvalidArgument>("position {} of sequence {}", t.pos, t.seq);
    if (cfg_.position_embd && t.pos >= w_.position_embd.rows)
      fail<InvalidArgument>("position {} is beyond the model's {} position embeddings", t.pos, w_.position_embd.rows);
    ++count[size_t(t.seq)];
    auto& [lo, hi] = span[size_t(t.seq)];
    lo = std::min(lo, t.pos);
    hi = std::max(hi, t.pos);
  }
  seq_last_.assign(size_t(batch.num_sequences()), -1);
  for (int s = 0; s < batch.num_sequences(); ++s) {
    const auto [lo, hi] = span[size_t(s)];
    seq_last_[size_t(s)] = hi;
    // Non-causal attention reads the whole sequence: all of it must be in this pass.
    if (!cfg_.causal && hi >= 0 && (lo != 0 || count[size_t(s)] != hi + 1))
      fail<InvalidArgument>(
          "sequence {} brings {} tokens of positions {}..{}: non-causal attention needs its whole "
          "input, positions 0.. in one pass",
          s, count[size_t(s)], lo, hi);
    for (int g = 0; g < batch.num_groups && hi >= 0; ++g) {
      const auto table = batch.table(s, g);
      if (size_t(hi / bs) >= table.size())
        fail<InvalidArgument>("position {} of sequence {} is outside its {} blocks", hi, s, table.size());
      // A sliding group may have given back what its window no longer reaches.
      const int w = kv.groups().windows[size_t(g)];
      for (int i = (w > 0 ? std::max(0, lo - w + 1) : 0) / bs; i <= hi / bs; ++i)
        if (table[size_t(i)] == kNoBlock)
          fail<InvalidArgument>("block {} of sequence {} (group {}) is gone but position {} reads it", i, s, g, lo);
    }
  }
  if (cfg_.n_recurrent_layers() > 0) check_states(batch, states);
}

// A recurrent layer folds a sequence's tokens into its state in order: the
// batch must bring each sequence's next tokens, consecutive, with a state to
// start from (none only at position 0) and another buffer to leave it in.
void Model::check_states(const Batch& batch, const StateStorage* states) {
  if (!states) fail<InvalidArgument>("a {} model needs recurrent state storage", cfg_.arch);
  const int n = batch.num_sequences();
  if (batch.state_in.size() != size_t(n) || batch.state_out.size() != size_t(n))
    fail<InvalidArgument>("batch of {} sequences names state buffers for {}", n, batch.state_out.size());
  seq_tokens_.assign(size_t(n), {});
  for (int t = 0; t < int(batch.tokens.size()); ++t) seq_tokens_[size_t(batch.tokens[size_t(t)].seq)].push_back(t);
  for (int s = 0; s < n; ++s) {
    auto& toks = seq_tokens_[size_t(s)];
    std::stable_sort(toks.begin(), toks.end(),
                     [&](int a, int b) { return batch.tokens[size_t(a)].pos < batch.tokens[size_t(b)].pos; });
    for (size_t i = 1; i < toks.size(); ++i)
      if (batch.tokens[size_t(toks[i])].pos != batch.tokens[size_t(toks[i - 1])].pos + 1)
        fail<InvalidArgument>("sequence {} brings positions {} and {}: a recurrent state needs them consecutive", s,
                              batch.tokens[size_t(toks[i - 1])].pos, batch.tokens[size_t(toks[i])].pos);
    const StateBuffer in = batch.state_in[size_t(s)], out = batch.state_out[size_t(s)];
    if (out < 0 || out >= states->num_buffers() || in < kNoState || in >= states->num_buffers() || in == out)
      fail<InvalidArgument>("sequence {} reads state buffer {} and writes {} of {}", s, in, out, states->num_buffers());
    if (!toks.empty() && (in == kNoState) != (batch.tokens[size_t(toks[0])].pos == 0))
      fail<InvalidArgument>("sequence {} starts at position {} {} a state", s, batch.tokens[size_t(toks[0])].pos,
                            in == kNoState ? "without" : "with");
  }
}

namespace {

float round_f16(float x) { return f16_to_f32(f32_to_f16(x)); }

// x += bias, when the layer has one (an empty bias is none).
void add_bias(float* x, const std::vector<float>& bias) {
  for (size_t i = 0; i < bias.size(); ++i) x[i] += bias[i];
}

// How one layer's scores are made: scale (q.k times), soft-cap, window (model/config.h).
struct AttendOptions {
  float scale;
  float softcap;
  int window;
  const float* sinks;  // the group's query heads' sink logits; null: none
};

// Attention of the query heads q_in[0 .. n_q) (hd floats apart) that share one
// KV head, over positions 0..pos of their sequence (the last `window` of
// them, with a window), reading K/V in place through the block table. Elem is
// float (F32 cache) or uint16_t (F16 cache: Q and the weights are rounded to
// F16 like the stored K/V).
template <class Elem>
void attend_heads(const KvStorage& kv, int layer, std::span<const int32_t> table, int pos, int kv_offset, int hd,
                  int n_q, const float* q_in, float* out, std::vector<float>& scores, const AttendOptions& o) {
  constexpr bool f16 = std::is_same_v<Elem, uint16_t>;
  auto k_at = [&](int p) -> const Elem* {
    if constexpr (f16)
      return kv.k_f16(layer, table[p / kv.block_size()], p % kv.block_size()) + kv_offset;
    else
      return kv.k_f32(layer, table[p / kv.block_size()], p % kv.block_size()) + kv_offset;
  };
  auto v_at = [&](int p) -> const Elem* {
    if constexpr (f16)
      return kv.v_f16(layer, table[p / kv.block_size()], p % kv.block_size()) + kv_offset;
    else
      return kv.v_f32(layer, table[p / kv.block_size()], p % kv.block_size()) + kv_offset;
  };
  const float* q = q_in;
  thread_local std::vector<float> q_f16;
  if constexpr (f16) {
    q_f16.resize(size_t(n_q) * hd);
    for (size_t i = 0; i < q_f16.size(); ++i) q_f16[i] = round_f16(q_in[i]);
    q = q_f16.data();
  }
  const int bs = kv.block_size();
  // A window starts the scores at its first position's block; the positions
  // before it in that block are masked below (whole blocks keep the kernels' paged shape).
  const int first = o.window > 0 ? std::max(0, pos - o.window + 1) : 0;
  const int p_begin = first / bs * bs;
  const size_t n_pos = size_t(pos - p_begin) + 1;
  scores.resize(size_t(n_q) * n_pos);             // head i's scores at scores[i * n_pos ...], position p_begin first
  const size_t ld = size_t(kv.kv_stride(layer));  // elements between a block's slots
  const TensorType type = f16 ? TensorType::F16 : TensorType::F32;
  // Head sizes of whole vectors (every Llama-family model's): one kernel
  // call per KV head for the scores and one for the values, over the blocks
  // in place (kernels/attention.h). Others: per block, one matmul call scores
  // its positions against every query head of the group (each K row read
  // once for all of them) and one axpy_rows call per head adds its V rows.
  // Both give the bits of one dot_f32 / dot_f16_f32 per score and one axpy
  // per V row.
  const bool kernels = attend_kernels_take(size_t(hd));
  thread_local std::vector<const void*> k_blocks, v_blocks;
  if (kernels) {
    k_blocks.resize((n_pos + size_t(bs) - 1) / size_t(bs));
    v_blocks.resize(k_blocks.size());
    for (size_t b = 0; b < k_blocks.size(); ++b) {
      k_blocks[b] = k_at(p_begin + int(b) * bs);
      v_blocks[b] = v_at(p_begin + int(b) * bs);
    }
    attend_scores(q, size_t(n_q), size_t(hd), PagedRows{type, k_blocks.data(), size_t(bs), ld}, n_pos, scores.data(),
                  n_pos);
  } else {
    for (int p0 = p_begin; p0 <= pos; p0 += bs)
      matmul_rows_fused(type, k_at(p0), ld * sizeof(Elem), size_t(std::min(bs, pos + 1 - p0)), q, size_t(hd),
                        size_t(n_q), size_t(hd), &scores[size_t(p0 - p_begin)], n_pos);
  }
  for (int i = 0; i < n_q; ++i) {
    float* s = scores.data() + size_t(i) * n_pos;
    float scale = o.scale;
    if (o.softcap > 0) {  // c * tanh(q.k * scale / c), then a plain softmax
      for (size_t p = 0; p < n_pos; ++p) s[p] = o.softcap * std::tanh(s[p] * o.scale / o.softcap);
      scale = 1.0f;
    }
    std::fill_n(s, size_t(first - p_begin), -INFINITY);  // before the window: weight 0
    softmax_scaled(s, n_pos, scale, o.sinks ? o.sinks[i] : -INFINITY);
    if constexpr (f16)
      for (size_t p = 0; p < n_pos; ++p) s[p] = round_f16(s[p]);
  }
  if (kernels)
    return attend_values(scores.data(), n_pos, size_t(n_q), PagedRows{type, v_blocks.data(), size_t(bs), ld}, n_pos,
                         out, size_t(hd));
  std::fill_n(out, size_t(n_q) * hd, 0.0f);
  for (int p0 = p_begin; p0 <= pos; p0 += bs) {
    const size_t n = size_t(std::min(bs, pos + 1 - p0));
    for (int i = 0; i < n_q; ++i) {
      const float* w = &scores[size_t(i) * n_pos + size_t(p0 - p_begin)];
      if constexpr (f16)
        axpy_rows_f16(w, v_at(p0), ld, n, out + size_t(i) * hd, size_t(hd));
      else
        axpy_rows_f32(w, v_at(p0), ld, n, out + size_t(i) * hd, size_t(hd));
    }
  }
}

}  // namespace

// A layer with a kv_source attends over that layer's K/V, through its group's block tables.
void Model::attention(const Batch& batch, int layer, const KvStorage& kv, ThreadPool& pool) {
  const LayerSpec& spec = cfg_.layers[size_t(layer)];
  const int hd = spec.head_dim, n_head = spec.n_head, n_kv = spec.n_head_kv, group = n_head / n_kv, Q = spec.q_dim();
  const int window = spec.window;
  const int kv_layer = spec.kv_source >= 0 ? spec.kv_source : layer;
  const std::vector<float>& sinks = w_.layers[size_t(layer)].attn_sinks;
  const AttendOptions options{cfg_.attn_scale, cfg_.attn_softcap, window, sinks.empty() ? nullptr : sinks.data()};
  size_t work = 0;  // multiply-adds: two passes over each token's past (or window), per head
  // The last position a token attends to: its own, or (non-causal) its sequence's last.
  auto last = [&](const BatchToken& t) { return cfg_.causal ? t.pos : seq_last_[size_t(t.seq)]; };
  for (const auto& t : batch.tokens)
    work += 2 * size_t(window > 0 ? std::min(last(t) + 1, window) : last(t) + 1) * size_t(hd) * size_t(n_head);
  // One unit of work per token and KV head: the query heads of its group
  // (adjacent in q_) share every K row read.
  pool.parallel_for(
      batch.tokens.size() * size_t(n_kv),
      [&](size_t begin, size_t end) {
        thread_local std::vector<float> scores;
        for (size_t i = begin; i < end; ++i) {
          const size_t t = i / size_t(n_kv);
          const int g = int(i % size_t(n_kv));
          const BatchToken& tok = batch.tokens[t];
          const auto table = batch.table(tok.seq, kv.group_of(kv_layer));
          const size_t first = t * size_t(Q) + size_t(g) * group * hd;
          AttendOptions o = options;
          if (o.sinks) o.sinks += g * group;
          if (kv.type() == KvType::F16)
            attend_heads<uint16_t>(kv, kv_layer, table, last(tok), g * hd, hd, group, q_.data() + first,
                                   att_.data() + first, scores, o);
          else
            attend_heads<float>(kv, kv_layer, table, last(tok), g * hd, hd, group, q_.data() + first,
                                att_.data() + first, scores, o);
        }
      },
      1, work);
}

// Q, K, V from the layer's input; per token biases, Q/K/V norms, RoPE, the
// query temperature and the K/V write; attention; the gate; wo into xb_. A
// layer with a kv_source computes Q alone (its source wrote K/V this pass).
void Model::attention_block(const Batch& batch, int l, const float* in, KvStorage& kv, ThreadPool& pool) {
  const LayerWeights& lw = w_.layers[size_t(l)];
  const LayerSpec& spec = cfg_.layers[size_t(l)];
  const Rope& rope = ropes_[size_t(l)];
  const int T = int(batch.tokens.size()), Q = spec.q_dim(), KV = spec.kv_dim(), hd = spec.head_dim;
  const int n_head = spec.n_head, n_head_kv = spec.n_head_kv;
  const bool own_kv = spec.kv_source < 0, v_is_k = own_kv && lw.wv.rows == 0;
  const int bs = kv.block_size();
  const float eps = cfg_.rms_eps;
  const bool gated = cfg_.attn_output_gate;
  if (gated) {
    qg_.resize(size_t(T) * 2 * Q);
    gate_.resize(size_t(T) * Q);
  }
  // q_ T x Q (or qg_ T x 2Q), k_ and v_ T x KV.
  if (!own_kv)
    matmul(lw.wq, in, T, q_.data(), pool);
  else if (v_is_k)
    matmul({{lw.wq, q_.data()}, {lw.wk, k_.data()}}, in, T, pool);
  else
    matmul({{lw.wq, gated ? qg_.data() : q_.data()}, {lw.wk, k_.data()}, {lw.wv, v_.data()}}, in, T, pool);
  pool.parallel_for(
      size_t(T),
      [&](size_t b, size_t e) {
        for (size_t t = b; t < e; ++t) {
          const BatchToken& tok = batch.tokens[t];
          float *q = &q_[t * Q], *k = &k_[t * KV], *v = &v_[t * KV];
          if (gated)  // per head: hd query values, then hd gate values
            for (int h = 0; h < n_head; ++h) {
              const float* src = &qg_[t * 2 * Q + size_t(h) * 2 * hd];
              std::copy_n(src, hd, q + h * hd);
              std::copy_n(src + hd, hd, &gate_[t * Q + size_t(h) * hd]);
            }
          if (v_is_k) std::copy_n(k, KV, v);  // before K's norm: V is the raw projection, normed below
          add_bias(q, lw.bq);
          add_bias(k, lw.bk);
          add_bias(v, lw.bv);
          if (cfg_.qk_norm == QkNorm::Whole) {
            rmsnorm(q, lw.q_norm.data(), Q, eps, q);
            if (own_kv) rmsnorm(k, lw.k_norm.data(), KV, eps, k);
          } else if (cfg_.qk_norm == QkNorm::PerHead) {
            for (int h = 0; h < n_head; ++h) rmsnorm(q + h * hd, lw.q_norm.data(), hd, eps, q + h * hd);
            for (int h = 0; h < n_head_kv && own_kv; ++h) rmsnorm(k + h * hd, lw.k_norm.data(), hd, eps, k + h * hd);
          }
          for (int h = 0; h < n_head_kv && own_kv && cfg_.v_norm; ++h)
            rmsnorm(v + h * hd, nullptr, hd, eps, v + h * hd);
          rope.apply(q, n_head, tok.pos);
          if (own_kv) rope.apply(k, n_head_kv, tok.pos);
          if (cfg_.q_temperature != 0) {
            const float temp = 1.0f + cfg_.q_temperature *
                                          std::log(std::floor(float(tok.pos) / float(cfg_.q_temperature_floor)) + 1.0f);
            for (int i = 0; i < Q; ++i) q[i] *= temp;
          }
          if (!own_kv) continue;
          const int block = batch.table(tok.seq, kv.group_of(l))[size_t(tok.pos / bs)];
          kv.write(l, block, tok.pos % bs, k, v);
        }
      },
      1, size_t(T) * size_t(Q) * 8);
  attention(batch, l, kv, pool);
  if (gated)
    for (size_t i = 0; i < size_t(T) * Q; ++i) att_[i] /= 1.0f + std::exp(-gate_[i]);  // times sigmoid(gate)
  matmul(lw.wo, att_.data(), T, xb_.data(), pool);
}

// xb_ (T x n_embd) = down(act(gate(in)) * up(in)) (ungated: down(gelu(up(in)))), F wide, biases but down's.
void Model::dense_ffn(const LayerWeights& lw, int F, const float* in, int T, ThreadPool& pool) {
  if (cfg_.gated_ffn())
    matmul({{lw.w_gate, hb_.data()}, {lw.w_up, hb2_.data()}}, in, T, pool);  // hb_, hb2_: T x F
  else
    matmul(lw.w_up, in, T, hb_.data(), pool);
  pool.parallel_for(
      size_t(T),
      [&](size_t b, size_t e) {
        for (size_t t = b; t < e; ++t) {
          float *gate = &hb_[t * size_t(F)], *up = &hb2_[t * size_t(F)];
          if (!cfg_.gated_ffn()) {  // hb_ holds up
            add_bias(gate, lw.b_up);
            gelu_tanh(gate, F);
            continue;
          }
          add_bias(gate, lw.b_gate);
          add_bias(up, lw.b_up);
          gated_activation(cfg_.act, gate, up, F);
        }
      },
      1, size_t(T) * size_t(F) * 8);
  matmul(lw.w_down, hb_.data(), T, xb_.data(), pool);
}

// MoeSpec::dense_beside, experts beside a dense MLP (gemma4): xb_ (T x n_embd) = post_norm_1(MLP(in)) +
// post_norm_2(experts(pre_norm_2(x))), the router reading rmsnorm(x) / sqrt(n_embd)
// * router_in_scale; x is the residual stream x_, in its ffn_norm.
void Model::experts_beside_mlp(const LayerWeights& lw, int l, const float* in, int T, ThreadPool& pool) {
  const int E = cfg_.n_embd;
  const float eps = cfg_.rms_eps, inv = 1.0f / std::sqrt(float(E));
  moe_in_.resize(size_t(T) * E);     // T x E: the experts' input
  router_in_.resize(size_t(T) * E);  // T x E: the router's
  moe_out_.resize(size_t(T) * E);    // T x E
  for (int t = 0; t < T; ++t) {
    const float* x = &x_[size_t(t) * E];
    rmsnorm(x, lw.pre_norm_2.data(), E, eps, &moe_in_[size_t(t) * E]);
    float* r = &router_in_[size_t(t) * E];
    rmsnorm(x, nullptr, E, eps, r);
    for (int i = 0; i < E; ++i) r[i] = r[i] * inv * lw.router_in_scale[size_t(i)];
  }
  moe_.forward(lw, cfg_, moe_in_.data(), T, moe_out_.data(), pool, router_in_.data());
  experts_run_ += moe_.experts_run();
  router_margin_ = std::min(router_margin_, moe_.router_margin());
  dense_ffn(lw, cfg_.layers[size_t(l)].n_ff, in, T, pool);  // xb_ = MLP(in)
  for (int t = 0; t < T; ++t) {
    float *a = &xb_[size_t(t) * E], *b = &moe_out_[size_t(t) * E];
    rmsnorm(a, lw.post_norm_1.data(), E, eps, a);
    rmsnorm(b, lw.post_norm_2.data(), E, eps, b);
    for (int i = 0; i < E; ++i) a[i] += b[i];
  }
}

void Model::forward(const Batch& batch, KvStorage& kv, ThreadPool& pool, std::vector<float>& logits,
                    StateStorage* states) {
  check(batch, kv, states);
  if (mover_ && !moved_) moved_ = mover_->adopt();
  experts_run_ = 0;
  router_margin_ = INFINITY;
  const int T = int(batch.tokens.size());
  const int E = cfg_.n_embd, Q = cfg_.max_q_dim(), KV = cfg_.max_kv_dim(), F = cfg_.max_n_ff();
  const float eps = cfg_.rms_eps, rs = cfg_.residual_scale;
  const bool pre = cfg_.pre_norms(), post = cfg_.post_norms(), post_add = cfg_.norms == NormPlacement::PostAdd;
  x_.resize(size_t(T) * E);
  xb_.resize(size_t(T) * E);
  q_.resize(size_t(T) * Q);
  k_.resize(size_t(T) * KV);
  v_.resize(size_t(T) * KV);
  att_.resize(size_t(T) * Q);
  hb_.resize(size_t(T) * F);
  hb2_.resize(size_t(T) * F);
  // Element-wise work per token (norms, RoPE, residuals): parallel only when large.
  auto per_token = [&](auto&& fn) {
    pool.parallel_for(
        size_t(T),
        [&](size_t b, size_t e) {
          for (size_t t = b; t < e; ++t) fn(int(t));
        },
        1, size_t(T) * size_t(std::max(E, F)) * 8);
  };
  auto row = [](auto& buf, int t, int width) { return &buf[size_t(t) * size_t(width)]; };
  // The model's norm: RMSNorm, or LayerNorm with its bias.
  auto norm = [&](const float* in, const std::vector<float>& weight, const std::vector<float>& bias, float* out) {
    if (cfg_.norm_kind == NormKind::Layer)
      layernorm(in, weight.data(), bias.data(), E, eps, out);
    else
      rmsnorm(in, weight.data(), E, eps, out);
  };
  // A sub-block's output in xb_ joins the residual stream x_: normed first
  // under post and sandwich placement, scaled where the model says; or
  // (post-add) the sum normed.
  auto add_residual = [&](int t, const std::vector<float>& post_norm, const std::vector<float>& post_norm_b) {
    float* out = row(xb_, t, E);
    if (post && !post_add) norm(out, post_norm, post_norm_b, out);
    float* x = row(x_, t, E);
    for (int i = 0; i < E; ++i) x[i] += rs * out[i];
    if (post_add) norm(x, post_norm, post_norm_b, x);
  };

  per_token([&](int t) {
    float* x = row(x_, t, E);
    read_row(w_.token_embd, batch.tokens[t].token, x);
    if (cfg_.embed_scale != 1.0f)
      for (int i = 0; i < E; ++i) x[i] *= cfg_.embed_scale;
    for (size_t i = 0; i < w_.token_type0.size(); ++i) x[i] += w_.token_type0[i];  // every input is type 0
    if (cfg_.position_embd) {
      thread_local std::vector<float> pos_row;
      pos_row.resize(size_t(E));
      read_row(w_.position_embd, batch.tokens[t].pos, pos_row.data());
      for (int i = 0; i < E; ++i) x[i] += pos_row[size_t(i)];
    }
    if (cfg_.embd_norm) norm(x, w_.embd_norm, w_.embd_norm_b, x);
  });

  // Per-layer inputs: pl_ T x (n_layer P), from the tokens and the scaled embeddings.
  if (cfg_.n_embd_per_layer > 0) per_layer_inputs(w_, cfg_, batch, x_.data(), pl_, pool);

  for (int l = 0; l < cfg_.n_layer; ++l) {
    const LayerWeights& lw = w_.layers[size_t(l)];
    // Attention (or a recurrent layer's mixer): x += mix(norm(x)), with the norms where the model puts them.
    if (pre) per_token([&](int t) { rmsnorm(row(x_, t, E), lw.attn_norm.data(), E, eps, row(xb_, t, E)); });
    const float* in = pre ? xb_.data() : x_.data();
    if (cfg_.layers[size_t(l)].recurrent)
      delta_.forward(batch, seq_tokens_, lw.delta, cfg_, l, *states, in, xb_.data(), pool);
    else
      attention_block(batch, l, in, kv, pool);
    per_token([&](int t) {
      add_bias(row(xb_, t, E), lw.bo);
      add_residual(t, lw.attn_post_norm, lw.attn_post_norm_b);
    });

    // FFN: x += down(act(gate(h)) * up(h)) (ungated: down(gelu(up(h)))), h = norm(x) (or x); or the experts' sum.
    if (pre) per_token([&](int t) { rmsnorm(row(x_, t, E), lw.ffn_norm.data(), E, eps, row(xb_, t, E)); });
    const float* ffn_in = pre ? xb_.data() : x_.data();
    if (cfg_.moe.n_expert > 0 && cfg_.moe.dense_beside) {
      experts_beside_mlp(lw, l, ffn_in, T, pool);
    } else if (cfg_.moe.n_expert > 0) {
      moe_out_.resize(size_t(T) * E);
      moe_.forward(lw, cfg_, ffn_in, T, moe_out_.data(), pool);
      experts_run_ += moe_.experts_run();
      router_margin_ = std::min(router_margin_, moe_.router_margin());
      std::copy(moe_out_.begin(), moe_out_.end(), xb_.begin());
    } else {
      dense_ffn(lw, cfg_.layers[size_t(l)].n_ff, ffn_in, T, pool);
    }
    per_token([&](int t) {
      add_bias(row(xb_, t, E), lw.b_down);
      add_residual(t, lw.ffn_post_norm, lw.ffn_post_norm_b);
    });
    // gemma4: the per-layer input's branch, then the layer's output scale on the whole stream.
    if (cfg_.n_embd_per_layer > 0) add_per_layer_input(lw, cfg_, l, pl_.data(), T, x_.data(), plb_, pool);
    if (lw.out_scale != 1.0f)
      per_token([&](int t) {
        for (int i = 0; i < E; ++i) x_[size_t(t) * E + size_t(i)] *= lw.out_scale;
      });
  }

  // Final norm (where the model has one) and vocabulary projection, only for the rows that want logits.
  int n_out = 0;
  for (int t = 0; t < T; ++t) {
    if (!batch.tokens[t].logits) continue;
    if (cfg_.output_norm)
      rmsnorm(row(x_, t, E), w_.output_norm.data(), E, eps, row(xb_, n_out, E));
    else
      std::copy_n(row(x_, t, E), E, row(xb_, n_out, E));
    ++n_out;
  }
  if (hidden_output_) {
    logits.assign(xb_.begin(), xb_.begin() + ptrdiff_t(size_t(n_out) * E));
    return;
  }
  const int V = cfg_.n_vocab;
  logits.resize(size_t(n_out) * V);
  if (n_out > 0) matmul(w_.output, xb_.data(), n_out, logits.data(), pool);
  if (cfg_.logit_scale != 1.0f || cfg_.final_softcap > 0) {
    const float scale = cfg_.logit_scale, cap = cfg_.final_softcap;
    for (float& z : logits) {
      z *= scale;
      if (cap > 0) z = cap * std::tanh(z / cap);
    }
  }
}

}  // namespace pagoda
