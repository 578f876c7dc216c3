// What the forward pass's tests share (on the device, cuda_forward_test.cpp;
// on the host, forward_emulation_test.cpp): the models, the steps and the
// measure of a logits difference.
#pragma once

#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kv/batch.h"
#include "kv/kv_groups.h"
#include "model/model.h"
#include "tools/synthetic.h"

namespace pagoda::cuda::testing {

inline double worst_row_error(const std::vector<float>& got, const std::vector<float>& want, int width) {
  double worst = 0;
  for (size_t r = 0; r * size_t(width) < want.size(); ++r) {
    double err = 0, scale = 1e-6;
    for (int i = 0; i < width; ++i) {
      const size_t at = r * size_t(width) + size_t(i);
      if (!std::isfinite(got[at])) return INFINITY;
      err = std::max(err, std::abs(double(got[at]) - double(want[at])));
      scale = std::max(scale, std::abs(double(want[at])));
    }
    worst = std::max(worst, err / scale);
  }
  return worst;
}

inline std::shared_ptr<Model> load_synthetic(const SyntheticModelSpec& spec, const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() / ("pagoda-cuda-" + name + ".gguf");
  synthetic_model(spec).write(path.string());
  auto model = std::shared_ptr<Model>(Model::load(path.string(), Residency::kMapped));
  std::filesystem::remove(path);  // the map keeps the bytes
  return model;
}

// A 37-token prefill (the cuBLAS path: over kGemmMinTokens) beside a 3-token
// chunk and a sequence's first 21 positions, then two decode steps of all
// three (matvec); tables scattered and out of order, in blocks of 16. With
// `states`, sequence s's recurrent state goes from buffer 2s to 2s + 1 and
// back, starting from none. With KV groups (their `windows`, kv/kv_groups.h),
// block b of the one-group tables is b G + g in group g (pages side by side,
// so rows written or read at a wrong stride land on another group's), and a
// sliding group's tables hold kNoBlock behind its window, as the block
// manager leaves them: the pool needs 31 G blocks. `tables` keeps the
// tables' storage.
inline std::vector<Batch> forward_steps(int vocab, std::vector<std::vector<int32_t>>& tables, bool states = false,
                                        const std::vector<int32_t>& windows = {0}) {
  std::mt19937 rng(3);
  const std::vector<int> lengths = {37, 3, 1};
  const std::vector<std::vector<int32_t>> blocks = {{4, 9, 1, 30}, {7}, {12, 2}};  // scattered, out of order
  const std::vector<int> first = {0, 0, 20};  // the third is mid-sequence: its earlier K/V come from the first step
  const int G = int(windows.size()), S = int(blocks.size()), kSteps = 3, kBlock = 16;
  // The first position each sequence computes in each step.
  auto start = [&](int step, int s) {
    return step == 0 ? (s == 2 ? 0 : first[size_t(s)]) : first[s] + lengths[s] + step - 1;
  };
  tables.assign(size_t(kSteps * S * G), {});
  for (int step = 0; step < kSteps; ++step)
    for (int s = 0; s < S; ++s)
      for (int g = 0; g < G; ++g) {
        std::vector<int32_t>& t = tables[size_t((step * S + s) * G + g)];
        for (int32_t b : blocks[size_t(s)]) t.push_back(b * G + g);
        const int32_t behind = blocks_behind_window(windows[size_t(g)], start(step, s), kBlock);
        std::fill(t.begin(), t.begin() + behind, kNoBlock);
      }
  std::vector<Batch> out;
  for (int step = 0; step < kSteps; ++step) {
    Batch b;
    b.num_groups = G;
    for (int s = 0; s < S; ++s) {
      std::vector<std::span<const int32_t>> own;
      for (int g = 0; g < G; ++g) own.push_back(tables[size_t((step * S + s) * G + g)]);
      b.add_sequence(own, uint64_t(s));
      if (states) b.set_state(s, step == 0 ? kNoState : int32_t(2 * s + (step + 1) % 2), int32_t(2 * s + step % 2));
      const int from = start(step, s), to = step == 0 ? first[size_t(s)] + lengths[size_t(s)] : from + 1;
      for (int p = from; p < to; ++p) b.add(int32_t(rng() % uint32_t(vocab)), s, p, p == to - 1);
    }
    out.push_back(b);
  }
  return out;
}

struct Case {
  std::string name;
  SyntheticModelSpec spec;
  double tolerance = 0.05;  // of worst_row_error; see forward_emulation_test.cpp
};

inline std::vector<Case> forward_cases() {
  SyntheticModelSpec base;
  base.n_embd = 256;  // a multiple of the K-quants' blocks
  base.n_ff = 512;
  base.n_head = 4;
  base.n_head_kv = 2;
  base.n_layer = 2;
  base.tied_embeddings = false;
  std::vector<Case> out;
  for (TensorType t : {TensorType::F32, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K, TensorType::F16,
                       TensorType::Q4_0, TensorType::Q5_K, TensorType::IQ4_XS, TensorType::BF16, TensorType::Q3_K}) {
    SyntheticModelSpec s = base;
    s.type = t;
    out.push_back({std::string(tensor_type_name(t)), s});
  }
  SyntheticModelSpec qwen2 = out[1].spec;
  qwen2.arch = "qwen2";
  qwen2.qkv_bias = true;
  out.push_back({"qwen2", qwen2});
  SyntheticModelSpec qwen3 = out[1].spec;
  qwen3.arch = "qwen3";
  qwen3.head_dim = 128;
  out.push_back({"qwen3", qwen3});
  SyntheticModelSpec factors = out[1].spec;
  factors.rope_freq_factors = true;
  out.push_back({"llama3-rope-factors", factors});
  // Gemma 3: sandwich norms, GeGLU, the sqrt(n_embd) embedding scale, per-head Q/K norms,
  // heads wider than n_embd / n_head, and 5 local layers of a 16-position window with their
  // own RoPE base per global one with linear scaling; the 37-token prefill reaches past the
  // window. Narrow and deep so the layers, not the scaled embedding, make the logits: each
  // feature left out moves them by 0.1 or more.
  SyntheticModelSpec gemma3 = out[1].spec;
  gemma3.arch = "gemma3";
  gemma3.n_embd = 64;
  gemma3.n_ff = 128;
  gemma3.head_dim = 32;
  gemma3.n_layer = 12;
  gemma3.sliding_window = 16;
  gemma3.sliding_pattern = 6;
  gemma3.rope_freq_base = 1000000.0f;
  gemma3.rope_freq_base_swa = 10000.0f;
  gemma3.rope_scaling = "linear";
  gemma3.rope_scaling_factor = 8.0f;
  out.push_back({"gemma3", gemma3});
  // OLMo 2: norms after each sub-block only, RMSNorms over all of Q and all of K; tied embeddings.
  SyntheticModelSpec olmo2 = out[1].spec;
  olmo2.arch = "olmo2";
  olmo2.tied_embeddings = true;
  out.push_back({"olmo2", olmo2});
  // Qwen3-MoE: every FFN 8 experts of 128, 2 a token, softmax then the top 2, renormalized;
  // the 37-token step routes 74 slots, several tiles to an expert. F32, so that no token's
  // route turns on the CPU's 8-bit activations (Q8_0 flipped one: 0.050), and its rows
  // agree to 0.0007: a wrong expert, weight or slot would move them by 0.01 or more.
  SyntheticModelSpec qwen3moe = out[0].spec;
  qwen3moe.arch = "qwen3moe";
  qwen3moe.n_expert = 8;
  qwen3moe.n_expert_used = 2;
  qwen3moe.n_ff_expert = 128;
  out.push_back({"qwen3moe", qwen3moe, 0.005});
  // The same with Q8_0 experts (the rest F32, so routes stay the CPU's): past 8 tokens a
  // step's experts go through mmq_experts' tensor-core tiles, their activations quantized as
  // the CPU's.
  SyntheticModelSpec qwen3moe_q8 = qwen3moe;
  qwen3moe_q8.expert_type = TensorType::Q8_0;
  out.push_back({"qwen3moe-q8_0-experts", qwen3moe_q8});
  // gpt-oss: the top 3 of 8 experts' logits then their softmax, biases on the router, the
  // experts, Q/K/V and the output, the clamped SwiGLU, a sink per head, 16-position windows
  // every other layer, YaRN (32 over 4096 positions). F32, as qwen3moe.
  SyntheticModelSpec gpt_oss = qwen3moe;
  gpt_oss.arch = "gpt-oss";
  gpt_oss.n_expert_used = 3;
  gpt_oss.qkv_bias = gpt_oss.out_bias = gpt_oss.expert_bias = true;
  gpt_oss.sliding_window = 16;
  gpt_oss.rope_freq_base = 150000.0f;
  gpt_oss.rope_scaling = "yarn";
  gpt_oss.rope_scaling_factor = 32.0f;
  gpt_oss.rope_orig_ctx = 4096;
  out.push_back({"gpt-oss", gpt_oss, 0.005});
  // gpt-oss as its files come: MXFP4 experts (the rest F32), past 8 tokens through mmq_experts.
  SyntheticModelSpec gpt_oss_mxfp4 = gpt_oss;
  gpt_oss_mxfp4.expert_type = TensorType::MXFP4;
  out.push_back({"gpt-oss-mxfp4-experts", gpt_oss_mxfp4});
  // Gemma 2: sandwich norms, GeGLU, soft-caps on the scores and the logits, windows every
  // other layer. Caps of 0.5 and 2 (the real ones, 50 and 30, are never reached by a small
  // random model): leaving either out moves the logits by 0.1 or more.
  SyntheticModelSpec gemma2 = gemma3;
  gemma2.softcaps[0] = 0.5f;
  gemma2.softcaps[1] = 2.0f;
  gemma2.arch = "gemma2";
  gemma2.n_layer = 4;
  gemma2.sliding_pattern = 0;
  gemma2.rope_freq_base_swa = 0;
  gemma2.rope_scaling.clear();
  out.push_back({"gemma2", gemma2});
  // Granite: llama with embedding, residual, attention and logit scales.
  SyntheticModelSpec granite = out[1].spec;
  granite.arch = "granite";
  out.push_back({"granite", granite});
  // SmolLM3: every fourth layer without RoPE.
  SyntheticModelSpec smollm3 = out[1].spec;
  smollm3.arch = "smollm3";
  smollm3.n_layer = 4;
  out.push_back({"smollm3", smollm3});
  // Ministral 3: YaRN with betas and a log multiplier, and the query's temperature by
  // position over an original context of 8 (so the steps' positions reach 6 of its periods).
  SyntheticModelSpec mistral3 = out[1].spec;
  mistral3.arch = "mistral3";
  mistral3.rope_scaling = "yarn";
  mistral3.rope_scaling_factor = 4.0f;
  mistral3.rope_orig_ctx = 8;
  out.push_back({"mistral3", mistral3});
  // Phi-3 128k: fused Q/K/V and gate/up, LongRoPE's factors and attention factor.
  SyntheticModelSpec phi3 = out[1].spec;
  phi3.arch = "phi3";
  phi3.fused_qkv = true;
  phi3.longrope = true;
  out.push_back({"phi3", phi3});
  // GLM-4: sandwich norms, fused gate/up, partial RoPE, Q/K/V biases.
  SyntheticModelSpec glm4 = out[1].spec;
  glm4.arch = "glm4";
  glm4.qkv_bias = true;
  glm4.rope_dims = 32;
  out.push_back({"glm4", glm4});
  // Gemma 4 (31B-like, and E2B's K/V sharing): sliding layers of 16-wide heads over two KV heads
  // and global ones of 64-wide heads over one, its V the K projection (so in KV groups a sliding
  // layer's rows of 32 sit in page slots of 64); V norms, sandwich norms, GeGLU, each layer's
  // output scale; the last two layers reading earlier layers' K/V. F32: rows within 0.006, and
  // leaving out the output scales moves them by 0.8.
  SyntheticModelSpec gemma4 = gemma3;
  gemma4.arch = "gemma4";
  gemma4.n_layer = 8;
  gemma4.head_dim = 64;
  gemma4.head_dim_swa = 16;
  gemma4.sliding_pattern = 3;
  gemma4.shared_kv_layers = 2;
  gemma4.global_k_eq_v = true;
  gemma4.n_head_kv_global = 1;
  gemma4.rope_scaling.clear();
  gemma4.type = TensorType::F32;
  out.push_back({"gemma4", gemma4});
  // Gemma 4 E2B-like: per-layer inputs of 16 a layer (a token table, the embedding's
  // projection, each layer's gated branch), one head size, the last two layers sharing K/V.
  SyntheticModelSpec gemma4_e2b = gemma4;
  gemma4_e2b.n_embd_per_layer = 16;
  gemma4_e2b.global_k_eq_v = false;
  gemma4_e2b.n_head_kv_global = 0;
  gemma4_e2b.head_dim_swa = 0;
  out.push_back({"gemma4-e2b", gemma4_e2b});
  // Gemma 4 26B-A4B-like: 8 experts of 64 (2 a token) in one fused gate-and-up tensor beside
  // the dense MLP, each branch normed on its own, the router reading the scaled stream.
  SyntheticModelSpec gemma4_moe = gemma4;
  gemma4_moe.n_expert = 8;
  gemma4_moe.n_expert_used = 2;
  gemma4_moe.n_ff_expert = 64;
  gemma4_moe.fused_gate_up_exps = true;
  out.push_back({"gemma4-moe", gemma4_moe});
  // Qwen3.5: three Gated DeltaNet layers (4 taps, 2 key heads read by 4 value heads of 16) to
  // one of gated attention (its query's gate, per-head Q/K norms, partial NeoX RoPE); each
  // sequence's state carried from step to step, the 37-token prefill's through 37 updates. F32.
  SyntheticModelSpec qwen35 = out[0].spec;
  qwen35.arch = "qwen35";
  qwen35.n_layer = 4;
  qwen35.rope_dims = 32;
  out.push_back({"qwen35", qwen35, 0.005});
  // Qwen3.5/3.6-MoE: the hybrid's layers with 8 experts of 128 (2 a token) and a shared expert
  // of 128, its output gated per token.
  SyntheticModelSpec qwen35moe = qwen35;
  qwen35moe.arch = "qwen35moe";
  qwen35moe.n_expert = 8;
  qwen35moe.n_expert_used = 2;
  qwen35moe.n_ff_expert = 128;
  out.push_back({"qwen35moe", qwen35moe, 0.005});
  return out;
}

}  // namespace pagoda::cuda::testing
