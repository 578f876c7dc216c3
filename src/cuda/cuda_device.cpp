#include "cuda/cuda_device.h"

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cuda/attention.h"
#include "cuda/cublas_library.h"
#include "cuda/dequant.h"
#include "cuda/formats.h"
#include "cuda/gemm.h"
#include "cuda/kv.h"
#include "cuda/matvec.h"
#include "cuda/norm_rope_act.h"
#include "cuda/step_faults.h"
#include "device/device_failure.h"
#include "util/error.h"

namespace pagoda::cuda {

using gpu::DeviceStatus;

namespace {

// A failed call inside a method; the method answers its status.
struct CallFailed {
  DeviceStatus status;
};

void ck(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw CallFailed{DeviceStatus::cuda(int(e), call)};
}
void ck(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) throw CallFailed{DeviceStatus::cublas(int(s), call)};
}

// Runs a method's body: a failed call becomes its status.
template <class F>
DeviceStatus answer(F&& body) {
  try {
    body();
    return DeviceStatus::success();
  } catch (const CallFailed& f) {
    return f.status;
  }
}

// Matrices above this many tokens go through F16 weights and cuBLAS; up to
// it, matvec launches of kMaxMatvecTokens read the quantized blocks.
constexpr int kGemmMinTokens = 32;

}  // namespace

// The device's parts, named outside the anonymous namespace as Impl's members are.
namespace parts {

struct Mat {
  TensorType type = TensorType::F32;
  int64_t rows = 0, cols = 0;
  const void* data = nullptr;
  int64_t elems() const { return rows * cols; }
};

struct Layer {
  const float *attn_norm = nullptr, *ffn_norm = nullptr;
  Mat wq, wk, wv, wo, gate, up, down;
  const float *bq = nullptr, *bk = nullptr, *bv = nullptr;  // null: none
  const float *q_norm = nullptr, *k_norm = nullptr;         // per head; null: none
};

// A step's buffers, for up to `limits`; shapes in the comments (T tokens,
// L logits rows, E n_embd, Q q_dim, K kv_dim, F n_ff, V n_vocab).
struct Buffers {
  gpu::StepLimits limits;
  float *x = nullptr, *h = nullptr;       // T x E: the residual stream, a normed or projected copy
  float *q = nullptr, *attn = nullptr;    // T x Q
  float *k = nullptr, *v = nullptr;       // T x K
  float *gate = nullptr, *up = nullptr;   // T x F
  float* xl = nullptr;                    // L x E: the rows whose logits are wanted
  float* logits = nullptr;                // L x V
  __half *x16 = nullptr, *w16 = nullptr;  // T x max(E, Q, F); the largest layer matrix
  int32_t* words = nullptr;               // the upload (gpu/step_upload.h)
  int32_t* host_words = nullptr;          // pinned: the upload's staging
  float* host_logits = nullptr;           // pinned: L x V
  std::vector<void*> device, pinned;

  void release() {
    for (void* p : device) cudaFree(p);
    for (void* p : pinned) cudaFreeHost(p);
    device.clear();
    pinned.clear();
  }
  template <class T>
  T* take(int64_t n) {
    void* p = nullptr;
    ck(cudaMalloc(&p, size_t(std::max<int64_t>(n, 1)) * sizeof(T)), "cudaMalloc");
    device.push_back(p);
    return static_cast<T*>(p);
  }
  template <class T>
  T* take_pinned(int64_t n) {
    void* p = nullptr;
    ck(cudaHostAlloc(&p, size_t(std::max<int64_t>(n, 1)) * sizeof(T), cudaHostAllocDefault), "cudaHostAlloc");
    pinned.push_back(p);
    return static_cast<T*>(p);
  }
};

}  // namespace parts

namespace {

using namespace parts;

int64_t upload_words(const gpu::StepLimits& l) {
  return gpu::StepUpload::kHeaderWords + 4 * int64_t(l.max_tokens) + int64_t(l.max_seqs) * l.max_blocks_per_seq +
         l.max_seqs + l.max_logits;
}

}  // namespace

struct CudaDevice::Impl {
  int ordinal = 0;
  DeviceFaults faults;
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;
  cublasHandle_t blas = nullptr;
  std::string name;
  // Set once the device hung or faulted: nothing is freed then (a free
  // would wait on the hung kernel); the process exits instead.
  bool lost = false;

  ModelConfig cfg;
  RopeParams rope_params;
  Mat token_embd, output;
  const float* output_norm = nullptr;
  std::vector<Layer> layers;
  int64_t largest_layer_matrix = 0;
  std::vector<void*> weights;
  std::unordered_map<const void*, const void*> uploaded;  // host bytes -> their device copy

  gpu::KvPoolShape pool;
  void* kv = nullptr;
  std::vector<__half*> k_cache, v_cache;  // per layer

  Buffers buf;
  int64_t launches = 0;
  int32_t pending_logits = -1;        // rows the launched step returns; -1: none launched
  int32_t* never_released = nullptr;  // the hang fault's flag, zero forever

  void use() { ck(cudaSetDevice(ordinal), "cudaSetDevice"); }

  const void* upload(const void* host, size_t bytes) {
    if (auto it = uploaded.find(host); it != uploaded.end()) return it->second;  // a tied or fused tensor
    void* p = nullptr;
    ck(cudaMalloc(&p, bytes), "cudaMalloc");
    weights.push_back(p);
    ck(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");  // at load, before serving
    uploaded[host] = p;
    return p;
  }
  const float* upload(const std::vector<float>& v) {
    return v.empty() ? nullptr : static_cast<const float*>(upload(v.data(), v.size() * sizeof(float)));
  }
  Mat upload(const Matrix& m) {
    if (m.panel_rows > 0)
      fail<InvalidArgument>("{} is packed into CPU row panels; the GPU reads a mapped model", m.name);
    if (!weight_type_supported(m.type))
      fail<Unsupported>("{} is {}, which no CUDA kernel decodes yet", m.name, tensor_type_name(m.type));
    return {m.type, m.rows, m.cols, upload(m.data, size_t(m.rows) * m.row_bytes)};
  }

  // out [T][w.rows] = in [T][w.cols] x w^T
  void matmul(const Mat& w, const float* in, int T, float* out, bool may_gemm = true) {
    if (T > kGemmMinTokens && may_gemm) {
      ck(dequantize_rows_f16(w.type, w.data, w.rows, w.cols, buf.w16, stream), "dequantize_rows_f16");
      ck(convert_f32_to_f16(in, buf.x16, int64_t(T) * w.cols, stream), "convert_f32_to_f16");
      ck(gemm_f16(blas, buf.x16, buf.w16, out, T, int(w.rows), int(w.cols), stream), "cublasGemmEx");
      return;
    }
    for (int t = 0; t < T; t += kMaxMatvecTokens)
      ck(matvec(w.type, w.data, w.rows, w.cols, in + int64_t(t) * w.cols, std::min(kMaxMatvecTokens, T - t),
                out + int64_t(t) * w.rows, stream),
         "matvec");
  }

  // A sticky error or a missed deadline: the device is lost for good.
  DeviceStatus note(const DeviceStatus& s) {
    const bool sticky = s.api == DeviceStatus::Api::kCuda
                            ? device::classify_cuda_error(s.code) == device::DeviceFailure::kDeviceLost
                            : device::classify_cublas_status(s.code) == device::DeviceFailure::kDeviceLost;
    if (!s.ok() && (s.api == DeviceStatus::Api::kDeadline || sticky)) lost = true;
    return s;
  }

  void forward(const gpu::StepUpload& u);
  void take_memory_then_fail();
};

CudaDevice::CudaDevice(std::unique_ptr<Impl> impl) : m_(std::move(impl)) {}

std::unique_ptr<CudaDevice> CudaDevice::open(int ordinal, const DeviceFaults& faults) {
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess)
    fail<Unsupported>("no CUDA device can be used: {}", cudaGetErrorName(e));
  if (ordinal < 0 || ordinal >= count) fail<Unsupported>("CUDA device {} does not exist ({} found)", ordinal, count);
  auto m = std::make_unique<Impl>();
  m->ordinal = ordinal;
  m->faults = faults;
  const DeviceStatus s = answer([&] {
    m->use();
    cudaDeviceProp p{};
    ck(cudaGetDeviceProperties(&p, ordinal), "cudaGetDeviceProperties");
    m->name = fmt::format("{} (sm_{}{}, {:.1f} GiB)", p.name, p.major, p.minor, double(p.totalGlobalMem) / (1 << 30));
    ck(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    ck(cudaEventCreateWithFlags(&m->done, cudaEventDisableTiming), "cudaEventCreate");
    ck(cublas_library().create(&m->blas), "cublasCreate");
    if (faults.hang_at_launch > 0) {
      ck(cudaMalloc(&m->never_released, sizeof(int32_t)), "cudaMalloc");
      ck(cudaMemset(m->never_released, 0, sizeof(int32_t)), "cudaMemset");
    }
  });
  if (!s.ok()) gpu::raise_device_error(s, fmt::format("opening CUDA device {}", ordinal));
  return std::unique_ptr<CudaDevice>(new CudaDevice(std::move(m)));
}

CudaDevice::~CudaDevice() {
  Impl& m = *m_;
  if (m.lost) return;  // a hung kernel would make every free below wait for it
  cudaSetDevice(m.ordinal);
  cudaStreamSynchronize(m.stream);  // nothing of ours is running: a finished or failed step
  m.buf.release();
  for (void* p : m.weights) cudaFree(p);
  if (m.kv) cudaFree(m.kv);
  if (m.never_released) cudaFree(m.never_released);
  if (m.blas) cublas_library().destroy(m.blas);
  if (m.done) cudaEventDestroy(m.done);
  if (m.stream) cudaStreamDestroy(m.stream);
}

std::string CudaDevice::name() const { return m_->name; }

DeviceStatus CudaDevice::memory(gpu::DeviceMemory& out) {
  return answer([&] {
    m_->use();
    size_t free = 0, total = 0;
    ck(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    out = {int64_t(free), int64_t(total)};
  });
}

std::string CudaDevice::unsupported(const ModelConfig& c) const {
  std::vector<std::string> no;
  auto need = [&no](bool ok, const char* what) {
    if (!ok) no.emplace_back(what);
  };
  need(c.norms == NormPlacement::Pre && c.norm_kind == NormKind::RMS, "norms other than pre-norm RMSNorm");
  need(c.act == Activation::SiLU, "an FFN activation other than SwiGLU");
  need(c.qk_norm != QkNorm::Whole, "whole-vector Q/K norms");
  need(c.moe.n_expert == 0, "a mixture of experts");
  need(c.n_recurrent_layers() == 0, "recurrent layers");
  need(c.attn_softcap == 0 && c.final_softcap == 0, "soft-capping");
  need(!c.attn_sinks && !c.attn_output_gate && !c.v_norm, "attention sinks, gates or V norms");
  need(c.embed_scale == 1 && c.residual_scale == 1 && c.logit_scale == 1 && c.q_temperature == 0,
       "embedding, residual, logit or query scales");
  need(c.n_embd_per_layer == 0 && !c.layer_output_scale, "per-layer inputs or output scales");
  need(!c.token_types && !c.position_embd && !c.embd_norm && c.causal && c.output_norm && c.pooling == Pooling::none,
       "an encoder or embedding model's input or output");
  need(c.head_dim <= kMaxAttentionHeadDim, "heads wider than 256");
  need(c.rope.enabled && c.rope.scaling == RopeScaling::None && c.rope.attn_factor == 1, "RoPE scaling");
  for (const LayerSpec& l : c.layers) {
    need(l.window == 0, "sliding-window layers");
    need(l.kv_source < 0, "layers sharing another's K/V");
    need(l.n_head == c.n_head && l.n_head_kv == c.n_head_kv && l.head_dim == c.head_dim && l.n_ff == c.n_ff,
         "layers of different shapes");
    need(l.rope.enabled == c.rope.enabled && l.rope.base == c.rope.base && l.rope.dims == c.rope.dims &&
             l.rope.layout == c.rope.layout,
         "layers of different RoPE");
  }
  std::sort(no.begin(), no.end());
  no.erase(std::unique(no.begin(), no.end()), no.end());
  std::string why;
  for (const auto& n : no) why += (why.empty() ? "" : "; ") + n;
  return why.empty() ? why : "the CUDA forward pass has no " + why;
}

DeviceStatus CudaDevice::load_weights(const Model& model) {
  Impl& m = *m_;
  m.cfg = model.config();
  const ModelWeights& w = model.weights();
  return answer([&] {
    m.use();
    m.token_embd = m.upload(w.token_embd);
    m.output = m.upload(w.output);
    m.output_norm = m.upload(w.output_norm);
    const float* factors = m.cfg.rope.freq_factors ? m.upload(w.rope_freq_factors) : nullptr;
    m.rope_params = {.n_rot = m.cfg.rope.dims > 0 ? m.cfg.rope.dims : m.cfg.head_dim,
                     .freq_base = m.cfg.rope.base,
                     .style = m.cfg.rope.layout == RopeLayout::NeoX ? RopeStyle::kNeox : RopeStyle::kNormal,
                     .freq_factors = factors};
    for (const LayerWeights& lw : w.layers) {
      if (!lw.bo.empty() || !lw.b_gate.empty() || !lw.b_up.empty() || !lw.b_down.empty())
        fail<Unsupported>("the CUDA forward pass adds no output or FFN biases");
      Layer l{.attn_norm = m.upload(lw.attn_norm),
              .ffn_norm = m.upload(lw.ffn_norm),
              .wq = m.upload(lw.wq),
              .wk = m.upload(lw.wk),
              .wv = m.upload(lw.wv),
              .wo = m.upload(lw.wo),
              .gate = m.upload(lw.w_gate),
              .up = m.upload(lw.w_up),
              .down = m.upload(lw.w_down),
              .bq = m.upload(lw.bq),
              .bk = m.upload(lw.bk),
              .bv = m.upload(lw.bv),
              .q_norm = m.upload(lw.q_norm),
              .k_norm = m.upload(lw.k_norm)};
      for (const Mat* x : {&l.wq, &l.wk, &l.wv, &l.wo, &l.gate, &l.up, &l.down})
        m.largest_layer_matrix = std::max(m.largest_layer_matrix, x->elems());
      m.layers.push_back(l);
    }
  });
}

DeviceStatus CudaDevice::reserve_workspace(const gpu::StepLimits& limits) {
  Impl& m = *m_;
  const ModelConfig& c = m.cfg;
  const int64_t T = limits.max_tokens, L = limits.max_logits;
  Buffers b;
  b.limits = limits;
  const DeviceStatus s = answer([&] {
    m.use();
    b.x = b.take<float>(T * c.n_embd);
    b.h = b.take<float>(T * c.n_embd);
    b.q = b.take<float>(T * c.q_dim());
    b.attn = b.take<float>(T * c.q_dim());
    b.k = b.take<float>(T * c.kv_dim());
    b.v = b.take<float>(T * c.kv_dim());
    b.gate = b.take<float>(T * c.n_ff);
    b.up = b.take<float>(T * c.n_ff);
    b.xl = b.take<float>(L * c.n_embd);
    b.logits = b.take<float>(L * c.n_vocab);
    if (T > kGemmMinTokens) {
      b.x16 = b.take<__half>(T * std::max({c.n_embd, c.q_dim(), c.n_ff}));
      b.w16 = b.take<__half>(m.largest_layer_matrix);
    }
    b.words = b.take<int32_t>(upload_words(limits));
    b.host_words = b.take_pinned<int32_t>(upload_words(limits));
    b.host_logits = b.take_pinned<float>(L * c.n_vocab);
  });
  if (!s.ok()) {
    b.release();  // the old buffers stay
    return s;
  }
  m.buf.release();
  m.buf = std::move(b);
  return s;
}

DeviceStatus CudaDevice::allocate_kv(const gpu::KvPoolShape& shape) {
  Impl& m = *m_;
  if (shape.type != KvType::F16) fail<Unsupported>("the CUDA KV cache is F16 (--kv-type f16)");
  if (shape.kv_dim != m.cfg.kv_dim() || shape.n_layer != m.cfg.n_layer)
    fail<InvalidArgument>("a KV pool of {} layers x {} for a model of {} x {}", shape.n_layer, shape.kv_dim,
                          m.cfg.n_layer, m.cfg.kv_dim());
  return answer([&] {
    m.use();
    ck(cudaMalloc(&m.kv, size_t(shape.bytes())), "cudaMalloc");
    m.pool = shape;
    const int64_t per_cache = int64_t(shape.num_blocks) * shape.block_size * shape.kv_dim;
    auto* base = static_cast<__half*>(m.kv);
    for (int l = 0; l < shape.n_layer; ++l) {
      m.k_cache.push_back(base + (2 * int64_t(l)) * per_cache);
      m.v_cache.push_back(base + (2 * int64_t(l) + 1) * per_cache);
    }
  });
}

DeviceStatus CudaDevice::copy_blocks(std::span<const BlockCopy> copies) {
  Impl& m = *m_;
  const size_t block = size_t(m.pool.block_size) * size_t(m.pool.kv_dim);  // elements of one block, one cache
  return m.note(answer([&] {
    m.use();
    // Few and rare (a fork's shared last block): plain copies on the step's stream, ahead of its kernels.
    for (const BlockCopy& c : copies)
      for (int l = 0; l < m.pool.n_layer; ++l)
        for (__half* cache : {m.k_cache[size_t(l)], m.v_cache[size_t(l)]})
          ck(cudaMemcpyAsync(cache + size_t(c.dst) * block, cache + size_t(c.src) * block, block * sizeof(__half),
                             cudaMemcpyDeviceToDevice, m.stream),
             "cudaMemcpyAsync");
  }));
}

// The OOM fault: a real allocation fails for want of memory, and the memory
// is given back at once, so the engine's smaller retry finds it.
void CudaDevice::Impl::take_memory_then_fail() {
  size_t free = 0, total = 0;
  ck(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  void* hog = nullptr;
  const size_t keep = size_t(16) << 20;
  if (free > keep) ck(cudaMalloc(&hog, free - keep), "cudaMalloc");
  void* step = nullptr;
  const cudaError_t e = cudaMalloc(&step, size_t(64) << 20);
  if (step) cudaFree(step);
  if (hog) cudaFree(hog);
  ck(e == cudaSuccess ? cudaErrorMemoryAllocation : e, "cudaMalloc (injected: the device's memory taken)");
}

void CudaDevice::Impl::forward(const gpu::StepUpload& u) {
  const ModelConfig& c = cfg;
  const int T = u.num_tokens(), S = u.num_seqs(), B = u.table_width(), L = u.num_logits();
  const int E = c.n_embd, Q = c.q_dim(), K = c.kv_dim(), F = c.n_ff, hd = c.head_dim;
  const float eps = c.rms_eps;
  std::memcpy(buf.host_words, u.words().data(), u.bytes());
  ck(cudaMemcpyAsync(buf.words, buf.host_words, u.bytes(), cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
  // The upload's sections on the device (gpu/step_upload.h; one KV group).
  const int32_t* tokens = buf.words + gpu::StepUpload::kHeaderWords;
  const int32_t* positions = tokens + T;
  const int32_t* seq_of = positions + T;
  const int32_t* slots = seq_of + T;
  const int32_t* tables = slots + T;
  const int32_t* logit_rows = tables + int64_t(S) * B + S;

  ck(embed_rows(token_embd.type, token_embd.data, token_embd.rows, token_embd.cols, tokens, T, buf.x, stream),
     "embed_rows");
  for (size_t li = 0; li < layers.size(); ++li) {
    const Layer& l = layers[li];
    // Attention: x += wo(attend(rope(q), rope(k), v)), q, k, v from rmsnorm(x).
    ck(rms_norm(buf.x, l.attn_norm, buf.h, T, E, eps, stream), "rms_norm");
    matmul(l.wq, buf.h, T, buf.q);
    matmul(l.wk, buf.h, T, buf.k);
    matmul(l.wv, buf.h, T, buf.v);
    if (l.bq) ck(add_bias(buf.q, l.bq, T, Q, stream), "add_bias");
    if (l.bk) ck(add_bias(buf.k, l.bk, T, K, stream), "add_bias");
    if (l.bv) ck(add_bias(buf.v, l.bv, T, K, stream), "add_bias");
    if (l.q_norm) ck(rms_norm(buf.q, l.q_norm, buf.q, T * c.n_head, hd, eps, stream), "rms_norm");
    if (l.k_norm) ck(rms_norm(buf.k, l.k_norm, buf.k, T * c.n_head_kv, hd, eps, stream), "rms_norm");
    ck(rope(buf.q, positions, T, c.n_head, hd, rope_params, stream), "rope");
    ck(rope(buf.k, positions, T, c.n_head_kv, hd, rope_params, stream), "rope");
    ck(store_kv(buf.k, buf.v, slots, T, K, k_cache[li], v_cache[li], stream), "store_kv");
    ck(paged_attention({.q = buf.q,
                        .k_cache = k_cache[li],
                        .v_cache = v_cache[li],
                        .seq_index = seq_of,
                        .positions = positions,
                        .block_tables = tables,
                        .out = buf.attn,
                        .n_tokens = T,
                        .n_head = c.n_head,
                        .n_kv_head = c.n_head_kv,
                        .head_dim = hd,
                        .block_size = pool.block_size,
                        .max_blocks_per_seq = B,
                        .scale = c.attn_scale},
                       stream),
       "paged_attention");
    matmul(l.wo, buf.attn, T, buf.h);
    ck(add(buf.x, buf.h, int64_t(T) * E, stream), "add");
    // FFN: x += down(silu(gate(h)) * up(h)), h = rmsnorm(x).
    ck(rms_norm(buf.x, l.ffn_norm, buf.h, T, E, eps, stream), "rms_norm");
    matmul(l.gate, buf.h, T, buf.gate);
    matmul(l.up, buf.h, T, buf.up);
    ck(swiglu(buf.gate, buf.up, buf.gate, int64_t(T) * F, stream), "swiglu");
    matmul(l.down, buf.gate, T, buf.h);
    ck(add(buf.x, buf.h, int64_t(T) * E, stream), "add");
  }
  // Logits for the wanted rows only: gather, norm, the output matrix (read by
  // matvec: an F16 copy of a vocabulary-sized matrix would not fit the workspace).
  ck(gather_rows(buf.x, logit_rows, L, E, buf.xl, stream), "gather_rows");
  ck(rms_norm(buf.xl, output_norm, buf.xl, L, E, eps, stream), "rms_norm");
  matmul(output, buf.xl, L, buf.logits, false);
  ck(cudaMemcpyAsync(buf.host_logits, buf.logits, size_t(L) * c.n_vocab * sizeof(float), cudaMemcpyDeviceToHost,
                     stream),
     "cudaMemcpyAsync");
}

DeviceStatus CudaDevice::launch_step(const gpu::StepUpload& u) {
  Impl& m = *m_;
  if (u.num_groups() != 1) fail<InvalidArgument>("a step of {} KV groups on a one-group device", u.num_groups());
  if (!m.buf.limits.covers({u.num_tokens(), u.num_seqs(), u.table_width(), u.num_logits()}))
    fail<InvalidArgument>("a step larger than its reserved workspace");  // CudaRunner grows it first
  const int64_t n = ++m.launches;
  const DeviceStatus s = answer([&] {
    m.use();
    if (n == m.faults.oom_at_launch) m.take_memory_then_fail();
    m.forward(u);
    if (n == m.faults.trap_at_launch) ck(launch_trap(m.stream), "launch_trap");
    if (n == m.faults.hang_at_launch) ck(launch_spin(m.never_released, m.stream), "launch_spin");
    ck(cudaEventRecord(m.done, m.stream), "cudaEventRecord");
    m.pending_logits = u.num_logits();
  });
  return m.note(s);
}

DeviceStatus CudaDevice::finish_step(Deadline deadline, std::span<float> logits) {
  Impl& m = *m_;
  if (m.pending_logits < 0) return DeviceStatus::cuda(int(cudaErrorNotReady), "finish_step before a launch");
  const DeviceStatus s = answer([&] {
    m.use();
    // Poll, never block: a wait without a deadline is how a hung kernel freezes a server.
    for (int polls = 0;; ++polls) {
      const cudaError_t e = cudaEventQuery(m.done);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) ck(e, "the step's kernels");
      if (std::chrono::steady_clock::now() >= deadline) throw CallFailed{DeviceStatus::deadline("the step's kernels")};
      if (polls < 64)
        std::this_thread::yield();  // a decode step ends in about a millisecond
      else
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    const size_t n = size_t(m.pending_logits) * size_t(m.cfg.n_vocab);
    if (logits.size() != n) ck(cudaErrorInvalidValue, "finish_step: a logits buffer of the wrong size");
    std::memcpy(logits.data(), m.buf.host_logits, n * sizeof(float));
  });
  m.pending_logits = -1;
  return m.note(s);
}

}  // namespace pagoda::cuda
