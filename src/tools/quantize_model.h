// Quantizing a whole F32/F16/BF16 GGUF model (`pagoda quantize`): which type
// each tensor gets, and the output file with the input's metadata.
//
// Rules (llama.cpp's, for the types Pagoda has):
// - Only 2-D tensors whose name ends in ".weight" are quantized; 1-D tensors
//   (norms, rope factors) are written as F32; anything else is copied as is.
// - Q8_0, Q4_0: every such matrix in that type.
// - Q4_K (a Q4_K_M mix, general.file_type 15): Q4_K, except Q6_K for
//   * the output matrix (output.weight, or token_embd.weight when the model
//     ties them), Q8_0 instead if its rows are not a multiple of 256;
//   * attn_v.weight and ffn_down.weight of layer i when use_more_bits(i, n):
//     the first and last eighth of the layers and every third one between.
// - Q5_1, IQ4_NL, Q2_K, Q3_K, Q5_K, Q6_K, IQ4_XS, MXFP4: every such matrix in
//   that one type (no mix: a uniform file per format, for tests and benchmarks;
//   general.file_type says the nearest llama.cpp mix: 9, 25, 10, 11, 16, 18,
//   30, and 38, MXFP4_MOE, whose experts alone llama.cpp makes MXFP4).
// - Where a row length is not a multiple of the chosen type's block: Q4_K
//   and Q5_K fall back to Q5_0, Q6_K, Q3_K and Q2_K to Q8_0, IQ4_XS to
//   IQ4_NL (as llama.cpp, e.g. Qwen2.5-0.5B's
//   896-wide rows), and any type that still does not fit to F16 (llama.cpp
//   refuses such a file for Q8_0/Q4_0; stories260K's 172-wide ffn_down needs it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/types.h"
#include "gguf/writer.h"

namespace pagoda {

class GgufFile;
class ThreadPool;

enum class QuantizeTarget { Q8_0, Q4_0, Q4_K_M, Q5_1, IQ4_NL, Q2_K, Q3_K, Q5_K, Q6_K, IQ4_XS, MXFP4 };

// "Q8_0", "Q4_0", "Q4_K" or "Q4_K_M", or a uniform type's name ("Q5_K",
// "IQ4_XS", ...; any case); nullopt otherwise.
std::optional<QuantizeTarget> quantize_target_from_name(std::string_view name);
// llama.cpp's llama_ftype for general.file_type: 7, 2, 15, ...
uint32_t quantize_target_file_type(QuantizeTarget t);

// llama.cpp's layer selection for the extra bits of Q4_K_M.
bool use_more_bits(int layer, int n_layers);

// The type a tensor stored as `stored` is written in. n_layers is the
// model's block count; has_output says whether it has its own output.weight.
TensorType quantized_type(QuantizeTarget target, const std::string& name, const std::vector<uint64_t>& shape,
                          TensorType stored, int n_layers, bool has_output);

struct QuantizeReport {
  std::map<std::string, int> tensors_by_type;  // output type name -> count
  uint64_t bytes_in = 0, bytes_out = 0;        // tensor data only
};

// Quantizes every tensor of `in` (InvalidArgument if any is already
// quantized) into a writer holding the input's metadata with
// general.file_type and general.quantization_version set.
GgufWriter quantize_model(const GgufFile& in, QuantizeTarget target, ThreadPool& pool,
                          QuantizeReport* report = nullptr);

// The file-level command: reads in_path, writes out_path.
QuantizeReport quantize_model_file(const std::string& in_path, const std::string& out_path, QuantizeTarget target,
                                   int threads = 0);

}  // namespace pagoda
