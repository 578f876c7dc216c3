#include "tools/quantize_model.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "gguf/file.h"
#include "quant/rows.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace pagoda {
namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// N of a "blk.N." tensor name, or -1.
int layer_of(const std::string& name) {
  int layer = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) return -1;
  return layer;
}

bool is_float_type(TensorType t) { return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16; }

int model_layers(const GgufFile& in) {
  const std::string arch = in.get_string("general.architecture", "");
  if (!arch.empty() && in.find(arch + ".block_count")) return int(in.get_u64(arch + ".block_count"));
  int n = 0;
  for (const auto& t : in.tensors()) n = std::max(n, layer_of(t.name) + 1);
  return n;
}

// Encodes one tensor's rows in `type`, in parallel over rows (each row is
// encoded on its own, so the bytes do not depend on the split).
std::vector<uint8_t> convert(const TensorInfo& t, TensorType type, ThreadPool& pool) {
  if (t.type == type) return {t.data, t.data + t.n_bytes};
  const size_t cols = size_t(t.shape[0]), rows = t.n_elements / cols;
  const size_t in_row = row_bytes(t.type, cols), out_row = row_bytes(type, cols);
  std::vector<uint8_t> out(rows * out_row);
  pool.parallel_for(rows, [&](size_t begin, size_t end) {
    std::vector<float> buf(cols);
    for (size_t r = begin; r < end; ++r) {
      dequantize_row(t.type, t.data + r * in_row, buf.data(), cols);
      quantize_row(type, buf.data(), out.data() + r * out_row, cols);
    }
  });
  return out;
}

}  // namespace

std::optional<QuantizeTarget> quantize_target_from_name(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "Q8_0") return QuantizeTarget::Q8_0;
  if (upper == "Q4_0") return QuantizeTarget::Q4_0;
  if (upper == "Q4_K" || upper == "Q4_K_M") return QuantizeTarget::Q4_K_M;
  if (upper == "Q5_1") return QuantizeTarget::Q5_1;
  if (upper == "IQ4_NL") return QuantizeTarget::IQ4_NL;
  if (upper == "Q2_K") return QuantizeTarget::Q2_K;
  if (upper == "Q3_K") return QuantizeTarget::Q3_K;
  if (upper == "Q5_K") return QuantizeTarget::Q5_K;
  if (upper == "Q6_K") return QuantizeTarget::Q6_K;
  if (upper == "IQ4_XS") return QuantizeTarget::IQ4_XS;
  if (upper == "MXFP4") return QuantizeTarget::MXFP4;
  return std::nullopt;
}

uint32_t quantize_target_file_type(QuantizeTarget t) {
  switch (t) {
    case QuantizeTarget::Q8_0: return 7;     // LLAMA_FTYPE_MOSTLY_Q8_0
    case QuantizeTarget::Q4_0: return 2;     // LLAMA_FTYPE_MOSTLY_Q4_0
    case QuantizeTarget::Q4_K_M: return 15;  // LLAMA_FTYPE_MOSTLY_Q4_K_M
    case QuantizeTarget::Q5_1: return 9;     // LLAMA_FTYPE_MOSTLY_Q5_1
    case QuantizeTarget::IQ4_NL: return 25;  // LLAMA_FTYPE_MOSTLY_IQ4_NL
    case QuantizeTarget::Q2_K: return 10;    // LLAMA_FTYPE_MOSTLY_Q2_K
    case QuantizeTarget::Q3_K: return 11;    // LLAMA_FTYPE_MOSTLY_Q3_K_S (uniform Q3_K)
    case QuantizeTarget::Q5_K: return 16;    // LLAMA_FTYPE_MOSTLY_Q5_K_S (uniform Q5_K)
    case QuantizeTarget::Q6_K: return 18;    // LLAMA_FTYPE_MOSTLY_Q6_K
    case QuantizeTarget::IQ4_XS: return 30;  // LLAMA_FTYPE_MOSTLY_IQ4_XS
    case QuantizeTarget::MXFP4: return 38;   // LLAMA_FTYPE_MOSTLY_MXFP4_MOE
  }
  return 0;
}

bool use_more_bits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

TensorType quantized_type(QuantizeTarget target, const std::string& name, const std::vector<uint64_t>& shape,
                          TensorType stored, int n_layers, bool has_output) {
  if (shape.size() == 1) return TensorType::F32;
  // Matrices, and the experts' stacks of them; the router keeps its type, as llama.cpp's quantizer leaves it.
  if ((shape.size() != 2 && shape.size() != 3) || !ends_with(name, ".weight") || contains(name, "ffn_gate_inp"))
    return stored;
  const uint64_t cols = shape[0];
  TensorType type = TensorType::Q8_0;
  switch (target) {
    case QuantizeTarget::Q8_0: type = TensorType::Q8_0; break;
    case QuantizeTarget::Q4_0: type = TensorType::Q4_0; break;
    case QuantizeTarget::Q4_K_M: {
      const bool output = name == "output.weight" || (!has_output && name == "token_embd.weight");
      const int layer = layer_of(name);
      if (output)
        type = cols % kQKK == 0 ? TensorType::Q6_K : TensorType::Q8_0;
      else if ((contains(name, "attn_v.weight") || contains(name, "ffn_down")) && layer >= 0 &&
               use_more_bits(layer, n_layers))
        type = TensorType::Q6_K;
      else
        type = TensorType::Q4_K;
      break;
    }
    case QuantizeTarget::Q5_1: type = TensorType::Q5_1; break;
    case QuantizeTarget::IQ4_NL: type = TensorType::IQ4_NL; break;
    case QuantizeTarget::Q2_K: type = TensorType::Q2_K; break;
    case QuantizeTarget::Q3_K: type = TensorType::Q3_K; break;
    case QuantizeTarget::Q5_K: type = TensorType::Q5_K; break;
    case QuantizeTarget::Q6_K: type = TensorType::Q6_K; break;
    case QuantizeTarget::IQ4_XS: type = TensorType::IQ4_XS; break;
    case QuantizeTarget::MXFP4: type = TensorType::MXFP4; break;
  }
  if (cols % block_elems(type) != 0) {
    if (type == TensorType::Q4_K || type == TensorType::Q5_K) type = TensorType::Q5_0;
    if (type == TensorType::Q6_K || type == TensorType::Q3_K || type == TensorType::Q2_K) type = TensorType::Q8_0;
    if (type == TensorType::IQ4_XS) type = TensorType::IQ4_NL;
    if (cols % block_elems(type) != 0) type = TensorType::F16;
  }
  return type;
}

GgufWriter quantize_model(const GgufFile& in, QuantizeTarget target, ThreadPool& pool, QuantizeReport* report) {
  for (const auto& t : in.tensors())
    if (!is_float_type(t.type))
      fail<InvalidArgument>("{}: tensor '{}' is already quantized ({}); quantize needs an F32, F16 or BF16 model",
                            in.source(), t.name, tensor_type_name(t.type));
  const int n_layers = model_layers(in);
  const bool has_output = in.find_tensor("output.weight") != nullptr;

  GgufWriter out(in.alignment());
  for (const auto& [key, value] : in.metadata()) out.set(key, value);
  out.set("general.file_type", Value::u32(quantize_target_file_type(target)));
  out.set("general.quantization_version", Value::u32(2));  // ggml's GGML_QNT_VERSION

  QuantizeReport r;
  for (const auto& t : in.tensors()) {
    const TensorType type = quantized_type(target, t.name, t.shape, t.type, n_layers, has_output);
    auto bytes = convert(t, type, pool);
    r.tensors_by_type[std::string(tensor_type_name(type))]++;
    r.bytes_in += t.n_bytes;
    r.bytes_out += bytes.size();
    out.add_tensor(t.name, type, t.shape, std::move(bytes));
  }
  if (report) *report = r;
  return out;
}

QuantizeReport quantize_model_file(const std::string& in_path, const std::string& out_path, QuantizeTarget target,
                                   int threads) {
  const auto in = GgufFile::open(in_path);
  // Writing over the input would truncate the file the tensors are mapped from.
  std::error_code ec;
  if (std::filesystem::equivalent(in_path, out_path, ec))
    fail<InvalidArgument>("the output {} is the input file", out_path);
  ThreadPool pool(threads);
  QuantizeReport report;
  quantize_model(in, target, pool, &report).write(out_path);
  return report;
}

}  // namespace pagoda
