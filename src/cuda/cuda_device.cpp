#include "cuda/cuda_device.h"

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <cstring>
#include <map>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cuda/attention.h"
#include "cuda/cublas_library.h"
#include "cuda/delta_net.h"
#include "cuda/dequant.h"
#include "cuda/formats.h"
#include "cuda/forward_pass.h"
#include "cuda/gemm.h"
#include "cuda/kv.h"
#include "cuda/matvec.h"
#include "cuda/moe.h"
#include "cuda/norm_rope_act.h"
#include "cuda/sampling.h"
#include "cuda/step_faults.h"
#include "device/device_failure.h"
#include "gpu/graph_buckets.h"
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

}  // namespace

// The device's parts, named outside the anonymous namespace as Impl's members are.
namespace parts {

// A step's buffers on the device, for up to `limits`, and their pinned host staging.
struct Workspace {
  gpu::StepLimits limits;
  StepBuffers act;                // forward_pass.h
  int32_t* words = nullptr;       // the upload (gpu/step_upload.h)
  int32_t* host_words = nullptr;  // pinned: the upload's staging
  float* host_logits = nullptr;   // pinned: L x V
  // Sampling on the device: the records (rows, then adjustments, then
  // penalty entries) and their staging, a scratch [L][2 * V], the answers.
  std::byte* sampling = nullptr;
  std::byte* host_sampling = nullptr;
  float* sample_scratch = nullptr;
  SampledRow* sampled = nullptr;
  SampledRow* host_sampled = nullptr;
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

// forward_pass.h's Ops: the real launchers on the step's stream, each failure thrown as its status.
struct Launches {
  cudaStream_t stream;
  cublasHandle_t blas;
  void* blas_workspace;
  size_t blas_workspace_bytes;
  // PagedAttentionArgs::heads_per_block and splits for every layer (0: the launcher's choice).
  int attention_heads, attention_splits;
  bool matvec_f32;  // mmvq's matmuls through matvec on F32 activations instead
  void embed_rows(TensorType t, const void* w, int64_t rows, int64_t k, const int32_t* ids, int n, float* out) {
    ck(cuda::embed_rows(t, w, rows, k, ids, n, out, stream), "embed_rows");
  }
  void dequantize_rows_f16(TensorType t, const void* w, int64_t rows, int64_t k, __half* out) {
    ck(cuda::dequantize_rows_f16(t, w, rows, k, out, stream), "dequantize_rows_f16");
  }
  void matvec(TensorType t, const void* w, int64_t rows, int64_t k, const float* x, int n, float* out) {
    ck(cuda::matvec(t, w, rows, k, x, n, out, stream), "matvec");
  }
  void convert_f32_to_f16(const float* x, __half* out, int64_t n) {
    ck(cuda::convert_f32_to_f16(x, out, n, stream), "convert_f32_to_f16");
  }
  void gemm_f16(const __half* x, const __half* w, float* out, int n_tokens, int rows, int k) {
    ck(cuda::gemm_f16(blas, x, w, out, n_tokens, rows, k, stream, blas_workspace, blas_workspace_bytes),
       "cublasGemmEx");
  }
  void mmq_quantize(TensorType t, const float* x, int n, int64_t k, void* scratch, size_t bytes) {
    ck(cuda::mmq_quantize(t, x, n, k, scratch, bytes, stream), "mmq_quantize");
  }
  void mmq_experts(const ExpertStack& w, const void* scratch, size_t bytes, int n_x_rows, int x_per_slot,
                   const int32_t* order, const ExpertTile* tiles, int max_tiles, float* out) {
    ck(cuda::mmq_experts(w, scratch, bytes, n_x_rows, x_per_slot, order, tiles, max_tiles, out, stream), "mmq_experts");
  }
  void mmvq_experts(const ExpertStack& w, const void* scratch, size_t bytes, int n_x_rows, int x_per_slot,
                    const int32_t* order, const ExpertTile* tiles, int max_tiles, float* out) {
    ck(cuda::mmvq_experts(w, scratch, bytes, n_x_rows, x_per_slot, order, tiles, max_tiles, out, stream),
       "mmvq_experts");
  }
  void mmq(TensorType t, const void* w, int64_t rows, int64_t k, const float* x, int n, float* out, void* scratch,
           size_t scratch_bytes) {
    ck(cuda::mmq(t, w, rows, k, x, n, out, scratch, scratch_bytes, stream), "mmq");
  }
  void mmq_quantized(TensorType t, const void* w, int64_t rows, int64_t k, const void* scratch, size_t scratch_bytes,
                     int n, float* out) {
    ck(cuda::mmq_quantized(t, w, rows, k, scratch, scratch_bytes, n, out, stream), "mmq_quantized");
  }
  void mmvq_quantized(TensorType t, const void* w, int64_t rows, int64_t k, const void* scratch, size_t scratch_bytes,
                      int n, float* out) {
    ck(cuda::mmvq_quantized(t, w, rows, k, scratch, scratch_bytes, n, out, stream), "mmvq_quantized");
  }
  void mmvq(TensorType t, const void* w, int64_t rows, int64_t k, const float* x, int n, float* out, void* scratch,
            size_t scratch_bytes) {
    if (matvec_f32) return matvec(t, w, rows, k, x, n, out);
    ck(cuda::mmvq(t, w, rows, k, x, n, out, scratch, scratch_bytes, stream), "mmvq");
  }
  void rms_norm(const float* x, const float* w, float* out, int n_rows, int n, float eps) {
    ck(cuda::rms_norm(x, w, out, n_rows, n, eps, stream), "rms_norm");
  }
  void add_bias(float* y, const float* b, int n_rows, int n) {
    ck(cuda::add_bias(y, b, n_rows, n, stream), "add_bias");
  }
  void rope(float* x, const int32_t* pos, int n_tokens, int n_heads, int head_dim, const RopeParams& p) {
    ck(cuda::rope(x, pos, n_tokens, n_heads, head_dim, p, stream), "rope");
  }
  void store_kv(const float* k, const float* v, const int32_t* slots, int n, int kv_dim, int row_stride, __half* kc,
                __half* vc) {
    ck(cuda::store_kv(k, v, slots, n, kv_dim, row_stride, kc, vc, stream), "store_kv");
  }
  void paged_attention(PagedAttentionArgs a) {
    if (attention_heads > 0) a.heads_per_block = attention_heads;
    if (attention_splits > 0) a.splits = attention_splits;
    ck(cuda::paged_attention(a, stream), "paged_attention");
  }
  void add(float* y, const float* x, int64_t n) { ck(cuda::add(y, x, n, stream), "add"); }
  void swiglu(const float* g, const float* u, float* out, int64_t n) {
    ck(cuda::swiglu(g, u, out, n, stream), "swiglu");
  }
  void geglu_tanh(const float* g, const float* u, float* out, int64_t n) {
    ck(cuda::geglu_tanh(g, u, out, n, stream), "geglu_tanh");
  }
  void swiglu_oai(const float* g, const float* u, float* out, int64_t n) {
    ck(cuda::swiglu_oai(g, u, out, n, stream), "swiglu_oai");
  }
  void scale(float* x, float s, int64_t n) { ck(cuda::scale(x, s, n, stream), "scale"); }
  void blend(float* x, const float* y, float a, float b, int64_t n) { ck(cuda::blend(x, y, a, b, n, stream), "blend"); }
  void gelu_times(float* g, const float* in, int n_tokens, int n, int64_t stride) {
    ck(cuda::gelu_times(g, in, n_tokens, n, stride, stream), "gelu_times");
  }
  void copy(float* dst, const float* src, int64_t n) {
    ck(cudaMemcpyAsync(dst, src, size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
  }
  void query_temperature(float* x, const int32_t* pos, int n_tokens, int n, float temperature, int floor) {
    ck(cuda::query_temperature(x, pos, n_tokens, n, temperature, floor, stream), "query_temperature");
  }
  void scale_softcap(float* x, float s, float cap, int64_t n) {
    ck(cuda::scale_softcap(x, s, cap, n, stream), "scale_softcap");
  }
  void moe_route(const float* logits, int n, const MoeRouting& r, int32_t* experts, float* weights) {
    ck(cuda::moe_route(logits, n, r, experts, weights, stream), "moe_route");
  }
  void moe_group(const int32_t* experts, int n_slots, int n_expert, int tile_slots, int32_t* order, ExpertTile* tiles,
                 int max_tiles) {
    ck(cuda::moe_group(experts, n_slots, n_expert, tile_slots, order, tiles, max_tiles, stream), "moe_group");
  }
  void matvec_experts(const ExpertStack& w, const float* x, int x_per_slot, const int32_t* order,
                      const ExpertTile* tiles, int max_tiles, float* out) {
    ck(cuda::matvec_experts(w, x, x_per_slot, order, tiles, max_tiles, out, stream), "matvec_experts");
  }
  void add_expert_bias(float* y, const float* bias, const int32_t* experts, int n_slots, int n) {
    ck(cuda::add_expert_bias(y, bias, experts, n_slots, n, stream), "add_expert_bias");
  }
  void row_dot(const float* x, const float* w, int n_tokens, int n, float* logit) {
    ck(cuda::row_dot(x, w, n_tokens, n, logit, stream), "row_dot");
  }
  void add_gated(float* out, const float* y, const float* logit, int n_tokens, int n) {
    ck(cuda::add_gated(out, y, logit, n_tokens, n, stream), "add_gated");
  }
  void moe_combine(const float* y, const int32_t* experts, const float* weights, const float* scale, int n_tokens,
                   int n_used, int n, float* out) {
    ck(cuda::moe_combine(y, experts, weights, scale, n_tokens, n_used, n, out, stream), "moe_combine");
  }
  void gather_rows(const float* in, const int32_t* idx, int n_out, int64_t n, float* out) {
    ck(cuda::gather_rows(in, idx, n_out, n, out, stream), "gather_rows");
  }
  void split_query_gate(const float* qg, int n, int n_head, int hd, float* q, float* gate) {
    ck(cuda::split_query_gate(qg, n, n_head, hd, q, gate, stream), "split_query_gate");
  }
  void sigmoid_gate(float* x, const float* gate, int64_t n) {
    ck(cuda::sigmoid_gate(x, gate, n, stream), "sigmoid_gate");
  }
  void sequence_ranges(const int32_t* seq_of, int n, int32_t* first, int32_t* end) {
    ck(cuda::sequence_ranges(seq_of, n, first, end, stream), "sequence_ranges");
  }
  void delta_conv(const float* mixed, const float* w, int K, int C, int n, const DeltaStates& st, float* out) {
    ck(cuda::delta_conv(mixed, w, K, C, n, st, out, stream), "delta_conv");
  }
  void delta_prepare(float* conv, int C, int hk, int dk, float eps, float* decay, float* beta, const float* a,
                     const float* dt_bias, int hv, int n) {
    ck(cuda::delta_prepare(conv, C, hk, dk, eps, decay, beta, a, dt_bias, hv, n, stream), "delta_prepare");
  }
  void delta_rule(const float* conv, int C, int hk, int hv, int dk, int dv, const float* decay, const float* beta,
                  float scale, int n_seqs, const DeltaStates& st, int64_t conv_floats, float* core) {
    ck(cuda::delta_rule(conv, C, hk, hv, dk, dv, decay, beta, scale, n_seqs, st, conv_floats, core, stream),
       "delta_rule");
  }
};

int64_t upload_words(const gpu::StepLimits& l) {
  return gpu::StepUpload::words_for(l.max_tokens, l.max_seqs, l.kv_groups, l.max_blocks_per_seq, l.max_logits);
}

// Both list entries are 8 bytes, and a RowSampling a multiple of 8: the three
// lists pack into one buffer without padding.
static_assert(sizeof(LogitAdjust) == 8 && sizeof(PenaltyEntry) == 8 && sizeof(RowSampling) % 8 == 0);
int64_t sampling_bytes(const gpu::StepLimits& l) {
  return int64_t(l.max_logits) * int64_t(sizeof(RowSampling)) + 8 * int64_t(l.max_sample_entries);
}

// cuBLAS's workspace, ours so that a captured GEMM takes no memory of its own:
// the size NVIDIA's cuBLAS guide gives for Hopper (32 MiB; 4 MiB elsewhere).
constexpr size_t kBlasWorkspaceBytes = size_t(32) << 20;

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

  ModelOnDevice model;  // forward_pass.h: the weights and the caches where the kernels read them
  std::vector<void*> weights;
  std::unordered_map<const void*, const void*> uploaded;  // host bytes -> their device copy

  gpu::KvPoolShape pool;
  void* kv = nullptr;
  gpu::StatePoolShape state_pool;  // a hybrid's recurrent state: model.states holds its buffers

  Workspace buf;
  int64_t launches = 0;
  int32_t pending_logits = -1;        // logits rows the launched step returns; -1: none launched
  int32_t pending_sampled = 0;        // and rows it sampled
  int32_t* never_released = nullptr;  // the hang fault's flag, zero forever
  void* blas_workspace = nullptr;

  // CUDA graphs of pure-decode steps (gpu/graph_buckets.h), one per key,
  // captured on first use; they hold the workspace's and the pool's
  // addresses, so they go whenever those buffers are replaced.
  bool graphs = true;
  int attention_heads = 0, attention_splits = 0;  // PAGODA_CUDA_ATTENTION_HEADS and _SPLITS (Launches)
  bool matvec_f32 = false;                        // PAGODA_CUDA_MATVEC_F32 (Launches)
  std::map<gpu::GraphKey, cudaGraphExec_t> graph_execs;
  void drop_graphs() {
    for (auto& [key, exec] : graph_execs) cudaGraphExecDestroy(exec);
    graph_execs.clear();
  }
  void run_graph(const gpu::GraphKey& key, const gpu::StepUpload& padded);

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

std::unique_ptr<CudaDevice> CudaDevice::open(int ordinal, const DeviceFaults& faults, bool graphs) {
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess)
    fail<Unsupported>("no CUDA device can be used: {}", cudaGetErrorName(e));
  if (ordinal < 0 || ordinal >= count) fail<Unsupported>("CUDA device {} does not exist ({} found)", ordinal, count);
  auto m = std::make_unique<Impl>();
  m->ordinal = ordinal;
  m->faults = faults;
  m->graphs = graphs;
  // For the device check's A/Bs of paged_attention's layouts (1: a block per query head; no split).
  if (const char* h = std::getenv("PAGODA_CUDA_ATTENTION_HEADS")) m->attention_heads = std::max(0, std::atoi(h));
  if (const char* z = std::getenv("PAGODA_CUDA_ATTENTION_SPLITS")) m->attention_splits = std::max(0, std::atoi(z));
  // And of decode's matmuls: mmvq's 8-bit activations, or (1) matvec's F32 ones.
  if (const char* f = std::getenv("PAGODA_CUDA_MATVEC_F32")) m->matvec_f32 = std::atoi(f) == 1;
  const DeviceStatus s = answer([&] {
    m->use();
    cudaDeviceProp p{};
    ck(cudaGetDeviceProperties(&p, ordinal), "cudaGetDeviceProperties");
    m->name = fmt::format("{} (sm_{}{}, {:.1f} GiB)", p.name, p.major, p.minor, double(p.totalGlobalMem) / (1 << 30));
    ck(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    ck(cudaEventCreateWithFlags(&m->done, cudaEventDisableTiming), "cudaEventCreate");
    ck(cublas_library().create(&m->blas), "cublasCreate");
    ck(cudaMalloc(&m->blas_workspace, kBlasWorkspaceBytes), "cudaMalloc");
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
  m.drop_graphs();
  m.buf.release();
  if (m.blas_workspace) cudaFree(m.blas_workspace);
  for (void* p : m.weights) cudaFree(p);
  if (m.kv) cudaFree(m.kv);
  if (m.model.states) cudaFree(m.model.states);
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
  need(c.norms != NormPlacement::PostAdd && c.norm_kind == NormKind::RMS, "LayerNorm or post-add norms");
  need(c.act != Activation::Gelu, "an ungated FFN");
  need(c.moe.n_expert <= kMaxExperts && c.moe.n_used <= kMaxExpertsUsed, "more than 512 experts or 32 a token");
  need(c.q_temperature == 0 || c.q_temperature_floor > 0, "a query temperature without its floor");
  need(!c.token_types && !c.position_embd && !c.embd_norm && c.causal && c.output_norm && c.pooling == Pooling::none,
       "an encoder or embedding model's input or output");
  need(c.n_recurrent_layers() == 0 || c.delta_net.head_k_dim <= kMaxDeltaHeadDim, "DeltaNet heads wider than 256");
  // Each layer runs in its own shape, its window, RoPE base and scaling (a Gated DeltaNet layer: delta_net.h).
  for (const LayerSpec& l : c.layers) need(l.recurrent || l.head_dim <= kMaxAttentionHeadDim, "heads wider than 512");
  std::sort(no.begin(), no.end());
  no.erase(std::unique(no.begin(), no.end()), no.end());
  std::string why;
  for (const auto& n : no) why += (why.empty() ? "" : "; ") + n;
  return why.empty() ? why : "the CUDA forward pass has no " + why;
}

DeviceStatus CudaDevice::load_weights(const Model& model) {
  Impl& m = *m_;
  return answer([&] {
    m.use();
    m.model = place_model(model, [&m](const void* host, size_t bytes) { return m.upload(host, bytes); });
  });
}

DeviceStatus CudaDevice::reserve_workspace(const gpu::StepLimits& limits) {
  Impl& m = *m_;
  const ModelConfig& c = m.model.cfg;
  const int64_t T = limits.max_tokens, L = limits.max_logits;
  Workspace w;
  StepBuffers& b = w.act;
  w.limits = limits;
  const DeviceStatus s = answer([&] {
    m.use();
    b.x = w.take<float>(T * c.n_embd);
    b.h = w.take<float>(T * c.n_embd);
    b.q = w.take<float>(T * c.max_q_dim());
    if (c.attn_output_gate) {
      b.qg = w.take<float>(2 * T * c.max_q_dim());
      b.attn_gate = w.take<float>(T * c.max_q_dim());
    }
    if (const DeltaNetSpec& d = c.delta_net; c.n_recurrent_layers() > 0) {
      b.mixed = w.take<float>(T * d.conv_channels());
      b.conv = w.take<float>(T * d.conv_channels());
      b.z = w.take<float>(T * d.n_v_heads * d.head_v_dim);
      b.core = w.take<float>(T * d.n_v_heads * d.head_v_dim);
      b.beta = w.take<float>(T * d.n_v_heads);
      b.decay = w.take<float>(T * d.n_v_heads);
      b.seq_first = w.take<int32_t>(limits.max_seqs);
      b.seq_end = w.take<int32_t>(limits.max_seqs);
    }
    b.attn = w.take<float>(T * c.max_q_dim());
    b.attn_split = w.take<float>(kAttentionSplitScratchFloats);
    b.k = w.take<float>(T * c.max_kv_dim());
    b.v = w.take<float>(T * c.max_kv_dim());
    b.gate = w.take<float>(T * c.max_n_ff());
    b.up = w.take<float>(T * c.max_n_ff());
    if (const MoeSpec& e = c.moe; e.n_expert > 0) {
      const int64_t slots = std::min<int64_t>(T, kMoeChunkTokens) * e.n_used;
      b.router_logits = w.take<float>(T * e.n_expert);
      b.expert_ids = w.take<int32_t>(slots);
      b.expert_weights = w.take<float>(slots);
      b.expert_order = w.take<int32_t>(slots);
      b.expert_tiles = w.take<ExpertTile>(max_expert_tiles(int(slots), e.n_expert));
      b.expert_gate = w.take<float>(slots * e.n_ff);
      b.expert_up = w.take<float>(slots * e.n_ff);
      b.expert_out = w.take<float>(slots * c.n_embd);
      b.expert_scratch_bytes =
          std::max(mmq_scratch_bytes(int(slots / e.n_used), c.n_embd), mmq_scratch_bytes(int(slots), e.n_ff));
      b.expert_scratch = w.take<std::byte>(int64_t(b.expert_scratch_bytes));
      if (e.dense_beside) {
        b.beside_in = w.take<float>(T * c.n_embd);
        b.beside_router = w.take<float>(T * c.n_embd);
        b.beside_out = w.take<float>(T * c.n_embd);
      }
      if (e.n_ff_shared > 0) {
        b.shexp_gate = w.take<float>(T * e.n_ff_shared);
        b.shexp_up = w.take<float>(T * e.n_ff_shared);
        b.shexp_out = w.take<float>(T * c.n_embd);
        b.shexp_logit = w.take<float>(T);
      }
    }
    if (const int64_t P = c.n_embd_per_layer; P > 0) {
      b.pl = w.take<float>(T * c.n_layer * P);
      b.pl_tok = w.take<float>(T * c.n_layer * P);
      b.pl_gate = w.take<float>(T * P);
    }
    b.xl = w.take<float>(L * c.n_embd);
    b.logits = w.take<float>(L * c.n_vocab);
    if (T > kGemmMinTokens) {
      b.x16 = w.take<__half>(T * m.model.widest_input);
      b.w16 = w.take<__half>(m.model.largest_layer_matrix);
    }
    if (T > kMaxMatvecTokens) {
      b.mmq_scratch_bytes = mmq_scratch_bytes(int(std::min<int64_t>(T, kMmqMaxTokens)), m.model.widest_input);
      b.mmq_scratch = w.take<std::byte>(int64_t(b.mmq_scratch_bytes));
    }
    w.words = w.take<int32_t>(upload_words(limits));
    w.host_words = w.take_pinned<int32_t>(upload_words(limits));
    w.host_logits = w.take_pinned<float>(L * c.n_vocab);
    w.sampling = w.take<std::byte>(sampling_bytes(limits));
    w.host_sampling = w.take_pinned<std::byte>(sampling_bytes(limits));
    w.sample_scratch = w.take<float>(2 * L * c.n_vocab);
    w.sampled = w.take<SampledRow>(L);
    w.host_sampled = w.take_pinned<SampledRow>(L);
  });
  if (!s.ok()) {
    w.release();  // the old buffers stay
    return s;
  }
  m.drop_graphs();  // they hold the old buffers' addresses
  m.buf.release();
  m.buf = std::move(w);
  return s;
}

DeviceStatus CudaDevice::allocate_kv(const gpu::KvPoolShape& shape) {
  Impl& m = *m_;
  if (shape.type != KvType::F16) fail<Unsupported>("the CUDA KV cache is F16 (--kv-type f16)");
  place_kv_groups(m.model, shape.groups);  // InvalidArgument where they do not fit the model
  if (shape.slot_dims != m.model.kv_slot_dims || shape.num_blocks < 1 || shape.block_size < 1)
    fail<InvalidArgument>("a KV pool of {} blocks of {} in slots of {} for a model whose slots are {}",
                          shape.num_blocks, shape.block_size, fmt::join(shape.slot_dims, "/"),
                          fmt::join(m.model.kv_slot_dims, "/"));
  return answer([&] {
    m.use();
    m.drop_graphs();  // they hold the caches' addresses (the pool comes once, before any step)
    ck(cudaMalloc(&m.kv, size_t(shape.bytes())), "cudaMalloc");
    m.pool = shape;
    m.model.block_size = shape.block_size;
    auto* at = static_cast<__half*>(m.kv);
    for (int dim : shape.slot_dims) {  // each slot's K, then its V
      const int64_t per_cache = int64_t(shape.num_blocks) * shape.block_size * dim;
      m.model.k_cache.push_back(at);
      m.model.v_cache.push_back(at + per_cache);
      at += 2 * per_cache;
    }
  });
}

DeviceStatus CudaDevice::allocate_states(const gpu::StatePoolShape& shape) {
  Impl& m = *m_;
  if (m.model.state_buffer_floats == 0 || shape.num_slots < 1 || shape.num_checkpoints < 0 || m.model.states)
    fail<InvalidArgument>("{} state slots for a model with {} recurrent layers", shape.num_slots,
                          m.model.cfg.n_recurrent_layers());
  return answer([&] {
    m.use();
    const size_t bytes = size_t(shape.num_buffers()) * size_t(m.model.state_buffer_floats) * sizeof(float);
    void* p = nullptr;
    ck(cudaMalloc(&p, bytes), "cudaMalloc");
    m.model.states = static_cast<float*>(p);
    // Zeros, so that no buffer ever holds garbage (each is written whole before it is read).
    ck(cudaMemset(p, 0, bytes), "cudaMemset");
    m.state_pool = shape;
  });
}

DeviceStatus CudaDevice::copy_states(std::span<const StateCopy> copies) {
  Impl& m = *m_;
  const size_t floats = size_t(m.model.state_buffer_floats);
  return m.note(answer([&] {
    m.use();
    for (const StateCopy& c : copies)  // a fork's or a checkpoint's: ahead of the step's kernels, on its stream
      ck(cudaMemcpyAsync(m.model.states + size_t(c.dst) * floats, m.model.states + size_t(c.src) * floats,
                         floats * sizeof(float), cudaMemcpyDeviceToDevice, m.stream),
         "cudaMemcpyAsync");
  }));
}

DeviceStatus CudaDevice::copy_blocks(std::span<const BlockCopy> copies) {
  Impl& m = *m_;
  return m.note(answer([&] {
    m.use();
    // Few and rare (a fork's shared last block): plain copies on the step's stream, ahead of its kernels.
    for (const BlockCopy& c : copies)
      for (size_t slot = 0; slot < m.pool.slot_dims.size(); ++slot) {
        const size_t block = size_t(m.pool.block_size) * size_t(m.pool.slot_dims[slot]);  // elements, one cache
        for (__half* cache : {m.model.k_cache[slot], m.model.v_cache[slot]})
          ck(cudaMemcpyAsync(cache + size_t(c.dst) * block, cache + size_t(c.src) * block, block * sizeof(__half),
                             cudaMemcpyDeviceToDevice, m.stream),
             "cudaMemcpyAsync");
      }
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

// Captures the padded step's forward pass on first use of its key, then
// launches the graph. A capture or instantiation that fails ends the capture
// (nothing is left capturing on the stream), keeps no graph and turns graphs
// off for good: a failure there is not the step's but the graph's, and would
// recur at every step; this step and the later ones run eagerly (a sticky
// fault then shows again in the eager launches).
void CudaDevice::Impl::run_graph(const gpu::GraphKey& key, const gpu::StepUpload& padded) {
  Launches ops{stream, blas, blas_workspace, kBlasWorkspaceBytes, attention_heads, attention_splits, matvec_f32};
  auto it = graph_execs.find(key);
  if (it == graph_execs.end()) {
    cudaGraphExec_t exec = nullptr;
    try {
      // Thread-local: another thread's CUDA calls (none here today) would not invalidate the capture.
      ck(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
      cudaGraph_t graph = nullptr;
      try {
        forward_pass(ops, model, buf.act, padded, buf.words);
      } catch (...) {
        cudaStreamEndCapture(stream, &graph);
        if (graph) cudaGraphDestroy(graph);
        throw;
      }
      ck(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
      const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
      cudaGraphDestroy(graph);  // the executable graph keeps what it needs
      ck(e, "cudaGraphInstantiate");
    } catch (const CallFailed& f) {
      graphs = false;
      spdlog::warn("CUDA graphs are off: capturing a {}-token decode step failed in {} (code {}{}); steps run eagerly",
                   key.tokens, f.status.call, f.status.code,
                   f.status.api == DeviceStatus::Api::kCuda
                       ? std::string(", ") + cudaGetErrorName(cudaError_t(f.status.code))
                       : std::string());
      cudaGetLastError();  // a capture error is not sticky; clear it before the eager launches
      return forward_pass(ops, model, buf.act, padded, buf.words);
    }
    it = graph_execs.emplace(key, exec).first;
  }
  ck(cudaGraphLaunch(it->second, stream), "cudaGraphLaunch");
}

void CudaDevice::Impl::forward(const gpu::StepUpload& step) {
  // A pure-decode step that fits the workspace once padded runs as its key's graph.
  std::optional<gpu::StepUpload> padded;
  gpu::GraphKey key;
  if (graphs && gpu::graphable(step)) {
    key = gpu::graph_key(step, buf.limits.max_blocks_per_seq);
    const int32_t entries = int32_t(step.adjusts().size() + step.penalties().size());
    if (buf.limits.covers({key.tokens, key.tokens, key.width, key.tokens, entries, step.num_groups()}))
      padded = gpu::pad_for_graph(step, key, pool.num_blocks, state_pool.num_buffers());
  }
  const gpu::StepUpload& u = padded ? *padded : step;
  // The words buffer is the same every step: a graph reads whatever was copied there last.
  std::memcpy(buf.host_words, u.words().data(), u.bytes());
  ck(cudaMemcpyAsync(buf.words, buf.host_words, u.bytes(), cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
  const int32_t D = u.num_sampled();
  const size_t V = size_t(model.cfg.n_vocab);
  // The sampling records in one copy: rows, adjustments, penalty entries.
  const size_t rows_bytes = size_t(D) * sizeof(RowSampling), adjust_bytes = u.adjusts().size_bytes();
  if (D > 0) {
    std::memcpy(buf.host_sampling, u.sampling_rows().data(), rows_bytes);
    std::memcpy(buf.host_sampling + rows_bytes, u.adjusts().data(), adjust_bytes);
    std::memcpy(buf.host_sampling + rows_bytes + adjust_bytes, u.penalties().data(), u.penalties().size_bytes());
    ck(cudaMemcpyAsync(buf.sampling, buf.host_sampling, rows_bytes + adjust_bytes + u.penalties().size_bytes(),
                       cudaMemcpyHostToDevice, stream),
       "cudaMemcpyAsync");
  }
  if (padded) {
    run_graph(key, u);
  } else {
    Launches ops{stream, blas, blas_workspace, kBlasWorkspaceBytes, attention_heads, attention_splits, matvec_f32};
    forward_pass(ops, model, buf.act, u, buf.words);
  }
  if (D > 0) {
    // The first D logits rows are the sampled ones (gpu/step_upload.h): only their answers come back.
    ck(sample_rows(buf.act.logits, buf.sample_scratch, D, int32_t(V), reinterpret_cast<RowSampling*>(buf.sampling),
                   reinterpret_cast<LogitAdjust*>(buf.sampling + rows_bytes),
                   reinterpret_cast<PenaltyEntry*>(buf.sampling + rows_bytes + adjust_bytes), buf.sampled, stream),
       "sample_rows");
    ck(cudaMemcpyAsync(buf.host_sampled, buf.sampled, size_t(D) * sizeof(SampledRow), cudaMemcpyDeviceToHost, stream),
       "cudaMemcpyAsync");
  }
  // The real rows only: a padded step's padding rows come after them.
  ck(cudaMemcpyAsync(buf.host_logits, buf.act.logits + size_t(D) * V, size_t(step.num_logits() - D) * V * sizeof(float),
                     cudaMemcpyDeviceToHost, stream),
     "cudaMemcpyAsync");
}

DeviceStatus CudaDevice::launch_step(const gpu::StepUpload& u) {
  Impl& m = *m_;
  if (u.num_groups() != m.pool.groups.num_groups())
    fail<InvalidArgument>("a step of {} KV groups on a pool of {}", u.num_groups(), m.pool.groups.num_groups());
  if (!m.buf.limits.covers({u.num_tokens(), u.num_seqs(), u.table_width(), u.num_logits(),
                            int32_t(u.adjusts().size() + u.penalties().size()), u.num_groups()}))
    fail<InvalidArgument>("a step larger than its reserved workspace");  // CudaRunner grows it first
  const int64_t n = ++m.launches;
  const DeviceStatus s = answer([&] {
    m.use();
    if (n == m.faults.oom_at_launch) m.take_memory_then_fail();
    m.forward(u);
    if (n == m.faults.trap_at_launch) ck(launch_trap(m.stream), "launch_trap");
    if (n == m.faults.hang_at_launch) ck(launch_spin(m.never_released, m.stream), "launch_spin");
    ck(cudaEventRecord(m.done, m.stream), "cudaEventRecord");
    m.pending_logits = u.num_logits() - u.num_sampled();
    m.pending_sampled = u.num_sampled();
  });
  return m.note(s);
}

DeviceStatus CudaDevice::finish_step(Deadline deadline, std::span<float> logits, std::span<SampledRow> sampled) {
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
    const size_t n = size_t(m.pending_logits) * size_t(m.model.cfg.n_vocab);
    if (logits.size() != n || sampled.size() != size_t(m.pending_sampled))
      ck(cudaErrorInvalidValue, "finish_step: a logits or sampled buffer of the wrong size");
    std::memcpy(logits.data(), m.buf.host_logits, n * sizeof(float));
    std::copy_n(m.buf.host_sampled, sampled.size(), sampled.begin());
  });
  m.pending_logits = -1;
  return m.note(s);
}

}  // namespace pagoda::cuda
