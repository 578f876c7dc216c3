// `pagoda quantize IN.gguf OUT.gguf TYPE`: writes a Q8_0, Q4_0 or Q4_K_M-style
// copy of an F32/F16/BF16 model, or one in a single type (Q5_1, IQ4_NL, Q2_K,
// Q3_K, Q5_K, Q6_K, IQ4_XS, MXFP4; rules in tools/quantize_model.h).
#include <fmt/format.h>

#include "tools/cmd/commands.h"
#include "tools/quantize_model.h"
#include "util/error.h"

namespace pagoda::tools {
using cli::Command;

Command add_quantize(CLI::App& app) {
  struct Opts {
    std::string in, out, type;
    int threads = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("quantize",
                                 "Quantize an F32/F16 GGUF model to Q8_0, Q4_0, Q4_K (Q4_K_M mix) or one of Q5_1, "
                                 "IQ4_NL, Q2_K, Q3_K, Q5_K, Q6_K, IQ4_XS, MXFP4");
  cmd->add_option("input", o->in, "Input GGUF model (F32, F16 or BF16 tensors)")->required();
  cmd->add_option("output", o->out, "Output GGUF file")->required();
  cmd->add_option("type", o->type, "Q8_0, Q4_0, Q4_K, Q5_1, IQ4_NL, Q2_K, Q3_K, Q5_K, Q6_K, IQ4_XS or MXFP4")
      ->required();
  cmd->add_option("--threads,-t", o->threads, "Worker threads (0 = one per core)")->capture_default_str();
  return {cmd, [o] {
            const auto target = quantize_target_from_name(o->type);
            if (!target)
              fail<InvalidArgument>(
                  "unknown quantization type '{}' (expected Q8_0, Q4_0, Q4_K, Q5_1, IQ4_NL, Q2_K, Q3_K, Q5_K, Q6_K, "
                  "IQ4_XS or "
                  "MXFP4)",
                  o->type);
            const auto r = quantize_model_file(o->in, o->out, *target, o->threads);
            std::string types;
            for (const auto& [name, n] : r.tensors_by_type)
              types += fmt::format("{}{} x{}", types.empty() ? "" : ", ", name, n);
            fmt::print("wrote {}: {} ({:.2f} MiB -> {:.2f} MiB of tensors)\n", o->out, types,
                       double(r.bytes_in) / 1048576, double(r.bytes_out) / 1048576);
            return 0;
          }};
}

}  // namespace pagoda::tools
