// What a transformer is, read from GGUF metadata (`{arch}.*` keys):
// its shape, and its block as a short list of pieces (where the norms sit,
// Q/K norms, the FFN activation, RoPE and its scaling, scales and soft-caps,
// each layer's attention window). One forward pass (model.h) runs every
// architecture from this description alone.
//
// Each architecture is a short declaration in model/archs/ that fills these
// fields from its keys; nothing else in Pagoda reads the architecture's name.
// Validated so later code can index without re-checking.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda {

class GgufFile;

// Which dimensions of a head RoPE rotates together (llama.cpp's rope modes).
enum class RopeLayout {
  Interleaved,  // pairs (x[2i], x[2i+1]): llama, granite, glm4
  NeoX,         // pairs (x[i], x[i + dims/2]): qwen, gemma, phi3, olmo2
};

// How positions are stretched beyond the trained context ({arch}.rope.scaling.type).
enum class RopeScaling {
  None,
  Linear,  // positions divided by the factor
  Yarn,    // YaRN: low-frequency pairs interpolated by the factor, high ones not, a ramp between
};

struct RopeSpec {
  bool enabled = true;  // false: the layer attends without positions (smollm3's NoPE layers)
  RopeLayout layout = RopeLayout::Interleaved;
  int dims = 0;  // leading dims of each head that rotate (fewer than head_dim: partial rotary)
  float base = 10000.0f;
  RopeScaling scaling = RopeScaling::None;
  float factor = 1.0f;  // {arch}.rope.scaling.factor: how far the context is stretched
  // Whether rope_freqs.weight divides each pair's angle (Llama 3.1's scaling).
  bool freq_factors = false;
  // YaRN's ramp: pairs that turn fewer than beta_slow times over the original
  // context are interpolated, more than beta_fast times kept; and its
  // magnitude correction (yarn_log_mul: DeepSeek's and Ministral's mscale_all_dim).
  int yarn_orig_ctx = 0;
  float yarn_beta_fast = 32.0f, yarn_beta_slow = 1.0f, yarn_log_mul = 0.0f;
  float attn_factor = 1.0f;  // {arch}.rope.scaling.attn_factor: multiplies the rotated Q and K
};

// Where each sub-block's norms sit around its residual add.
enum class NormPlacement {
  Pre,       // x += f(norm(x)): llama, qwen, phi3, granite
  Post,      // x += norm(f(x)): olmo2
  Sandwich,  // x += norm(f(norm(x))): gemma2/3, glm4
  PostAdd,   // x = norm(x + f(x)): bert (the original transformer's)
};

// What the norms are.
enum class NormKind {
  RMS,    // x / rms(x) * weight
  Layer,  // (x - mean) / stddev * weight + bias: bert
};

// RMSNorm of Q and K after their projections, before RoPE.
enum class QkNorm {
  None,
  PerHead,  // each head over head_dim, one weight vector for all heads: qwen3, gemma3
  Whole,    // over all of q (q_dim) and all of k (kv_dim): olmo2
};

// The FFN's activation: gated, act(gate) * up; or plain, act(up).
enum class Activation {
  SiLU,      // SwiGLU
  GeluTanh,  // GeGLU, GELU's tanh approximation: gemma
  // gpt-oss's clamped SwiGLU: g = min(gate, 7), u = clamp(up, -7, 7),
  // g * sigmoid(1.702 g) * (u + 1).
  SwigluOai,
  Gelu,  // ungated: gelu(up), GELU's tanh approximation; no ffn_gate (bert)
};

// How a mixture of experts' router turns its logits into the chosen experts' weights.
enum class ExpertGating {
  SoftmaxTopK,  // softmax over every expert, then the k most probable (qwen3moe, Mixtral)
  TopKSoftmax,  // the k largest logits, then a softmax over those k (gpt-oss)
};

// A mixture of experts in place of the dense FFN: a router (ffn_gate_inp)
// scores n_expert gated experts, each n_ff wide, and a token passes through
// the n_used best, its output their weighted sum. Ties go to the lower index.
struct MoeSpec {
  int n_expert = 0;  // {arch}.expert_count; 0: the FFN is dense
  int n_used = 0;    // {arch}.expert_used_count: k
  int n_ff = 0;      // {arch}.expert_feed_forward_length: each expert's hidden width
  ExpertGating gating = ExpertGating::SoftmaxTopK;
  bool normalize = true;  // the k weights divided by their sum (Qwen3's norm_topk_prob)
  float scale = 1.0f;     // then multiplied by this
  // A shared SwiGLU expert of this width that every token passes as well, its
  // output gated by sigmoid(ffn_gate_inp_shexp . x) (qwen35moe); 0: none.
  int n_ff_shared = 0;
  // gemma4 (26B-A4B): a dense MLP of the layer's n_ff beside the experts,
  // each branch normed on its own (ffn_norm, MLP, post_ffw_norm_1;
  // pre_ffw_norm_2, experts, post_ffw_norm_2), the two summed before the
  // sandwich's post norm; the router reads rmsnorm(x) / sqrt(n_embd) *
  // ffn_gate_inp.scale of the residual stream x, not the experts' input.
  bool dense_beside = false;
};

// Gated DeltaNet linear attention (Qwen3.5/3.6, Qwen3-Next), for the layers
// marked recurrent: per sequence, a short causal convolution's last
// conv_kernel - 1 inputs and a head_v_dim x head_k_dim matrix per value head
// stand in for K/V. Value head h reads key head h % n_k_heads (the GGUF's
// "tiled" head order).
struct DeltaNetSpec {
  int conv_kernel = 0;  // {arch}.ssm.conv_kernel
  int n_k_heads = 0;    // {arch}.ssm.group_count
  int n_v_heads = 0;    // {arch}.ssm.time_step_rank
  int head_k_dim = 0;   // {arch}.ssm.state_size
  int head_v_dim = 0;   // {arch}.ssm.inner_size / n_v_heads
  // Channels of the convolution: q, k (n_k_heads x head_k_dim each), v.
  int conv_channels() const { return 2 * n_k_heads * head_k_dim + n_v_heads * head_v_dim; }
  int64_t conv_state_floats() const { return int64_t(conv_kernel - 1) * conv_channels(); }
  int64_t matrix_state_floats() const { return int64_t(n_v_heads) * head_v_dim * head_k_dim; }
};

// What may differ from one layer to the next.
struct LayerSpec {
  int window = 0;  // 0: full attention; else a query attends to the last `window` positions, itself included
  RopeSpec rope;
  bool recurrent = false;  // a Gated DeltaNet layer (ModelConfig::delta_net): no K/V, a state
  // The layer's attention and FFN shape: the model's, unless the file gives
  // per-layer arrays or the declaration says otherwise (gemma4's sliding and
  // global layers differ in head size and KV heads).
  int n_head = 0, n_head_kv = 0, head_dim = 0;
  int n_ff = 0;
  // The earlier layer whose K/V this one attends over, computing only Q: it
  // keeps no K/V of its own (gemma4's shared KV). -1: its own.
  int kv_source = -1;

  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_head_kv * head_dim; }
  bool has_kv() const { return !recurrent && kv_source < 0; }
};

// How an embedding model pools its final hidden states into one vector per
// sequence (`{arch}.pooling_type`, numbered as llama.cpp numbers them). none:
// a generating model, whose output is logits.
enum class Pooling { none = 0, mean = 1, cls = 2, last = 3, rank = 4 };

struct ModelConfig {
  std::string arch;  // general.architecture
  std::string name;  // general.name, if any
  int n_vocab = 0;   // rows of token_embd.weight
  int n_embd = 0;    // model width
  int n_layer = 0;
  int n_ff = 0;  // FFN hidden width
  int n_head = 0;
  int n_head_kv = 0;  // < n_head means grouped-query attention
  int head_dim = 0;
  int n_ctx_train = 0;    // context length the model was trained for
  float rms_eps = 1e-5f;  // the norms' epsilon (LayerNorm's too)

  // The input: token embeddings, and for the encoders token type 0's row
  // (token_types), bert's absolute position embeddings (position_embd,
  // n_ctx_train rows) and a norm of their sum (token_embd_norm).
  bool token_types = false;
  bool position_embd = false;
  bool embd_norm = false;
  // {arch}.attention.causal: false attends every token to its whole sequence
  // (bert), which the engine then computes in one pass.
  bool causal = true;

  // The block.
  NormPlacement norms = NormPlacement::Pre;
  NormKind norm_kind = NormKind::RMS;
  QkNorm qk_norm = QkNorm::None;
  Activation act = Activation::SiLU;
  bool fused_gate_up = false;      // ffn_up.weight holds gate's rows then up's (phi3, glm4); no ffn_gate
  bool qkv_bias_required = false;  // the architecture always has Q/K/V biases (qwen2)
  float attn_scale = 0.0f;         // multiplies q.k before the softmax; set to 1/sqrt(head_dim) unless declared
  float attn_softcap = 0.0f;       // 0: none; else scores become c * tanh(scores / c) (gemma2)
  // A learned logit per query head (attn_sinks.weight) that joins the
  // softmax's denominator only: gpt-oss's attention sinks.
  bool attn_sinks = false;
  // attn_q holds, per head, the query then a gate: the attention output is
  // multiplied by sigmoid(gate) before attn_output (qwen35).
  bool attn_output_gate = false;
  bool v_norm = false;  // V is RMS-normed per head, without a weight (gemma4)
  // The tensor of the RMSNorm before the FFN (gpt-oss names it post_attention_norm).
  std::string ffn_norm_name = "ffn_norm";
  // The norms after each sub-block (Post, Sandwich, PostAdd); bert's are attn_output_norm and layer_output_norm.
  std::string attn_post_norm_name = "post_attention_norm", ffn_post_norm_name = "post_ffw_norm";
  bool output_norm = true;  // output_norm before the head (bert has none)

  // Model-level scales (granite, gemma).
  float embed_scale = 1.0f;     // multiplies the token embeddings
  float residual_scale = 1.0f;  // multiplies each sub-block's output before its residual add
  float logit_scale = 1.0f;     // multiplies the logits
  float final_softcap = 0.0f;   // 0: none; else logits become c * tanh(logits / c) (gemma2)
  // Query temperature by position (Llama 4, Ministral 3): q *= 1 + t * ln(1 + floor(pos / n)), t = 0: none.
  float q_temperature = 0.0f;
  int q_temperature_floor = 0;  // n

  Pooling pooling = Pooling::none;  // an embedding model's, as its file declares it

  // Per-layer inputs (gemma4's E2B/E4B): a second embedding table of
  // n_layer x n_embd_per_layer per token, plus a projection of the input
  // embedding, gives each layer a slice that gates a small residual branch
  // after its FFN (model.cpp). 0: none.
  int n_embd_per_layer = 0;
  // Whether a layer may carry layer_output_scale.weight: one scalar multiplying
  // the residual stream after the layer (gemma4).
  bool layer_output_scale = false;

  MoeSpec moe;             // every layer's FFN, when moe.n_expert > 0
  DeltaNetSpec delta_net;  // the recurrent layers' shape, when any layer is recurrent

  RopeSpec rope;                  // as the file states it; a layer's own may differ (layers[l].rope)
  std::vector<LayerSpec> layers;  // n_layer entries

  bool pre_norms() const { return norms == NormPlacement::Pre || norms == NormPlacement::Sandwich; }
  bool post_norms() const { return norms != NormPlacement::Pre; }
  bool gated_ffn() const { return act != Activation::Gelu; }

  // The model's head shape (layer 0's where layers differ; LayerSpec has each layer's).
  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_head_kv * head_dim; }
  // The widest layer's, for buffers every layer shares.
  int max_q_dim() const;
  int max_kv_dim() const;
  int max_n_ff() const;
  // Bytes of K and V for one token over the layers that keep their own, in F32.
  size_t kv_bytes_per_token() const;

  int n_recurrent_layers() const {
    int n = 0;
    for (const auto& l : layers) n += l.recurrent;
    return n;
  }
  // Bytes of one recurrent-state buffer (kv/types.h): every recurrent layer's
  // convolution and matrix states, F32. 0: no recurrent layers.
  int64_t state_bytes() const {
    return int64_t(n_recurrent_layers()) * (delta_net.conv_state_floats() + delta_net.matrix_state_floats()) *
           int64_t(sizeof(float));
  }

  static ModelConfig from_gguf(const GgufFile& f);  // Unsupported / FormatError
};

const char* rope_layout_name(RopeLayout layout);           // "interleaved", "neox"
const char* rope_scaling_name(RopeScaling scaling);        // "none", "linear", "yarn"
const char* norm_placement_name(NormPlacement placement);  // "pre", "post", "sandwich", "post-add"
const char* expert_gating_name(ExpertGating gating);       // "softmax, top-k", "top-k, softmax"
const char* activation_name(Activation act);               // "SwiGLU", "GeGLU", "clamped SwiGLU", "GELU"
const char* pooling_name(Pooling pooling);                 // "none", "mean", "cls", "last", "rank"
Pooling pooling_from_name(std::string_view name);          // InvalidArgument for another name

// The architectures Pagoda runs, comma-separated (for messages that refuse a file).
std::string supported_architectures();

}  // namespace pagoda
