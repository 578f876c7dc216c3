// `pagoda synth SHAPE OUT.gguf [--type T]`: writes a synthetic model of one
// of the benchmark shapes (tools/synthetic.h: random weights, the real
// models' layers and metadata), for soaks and for benchmarks against other
// engines on the same file. Never committed: made where it is used.
#include <fmt/format.h>

#include "gguf/types.h"
#include "tools/cmd/commands.h"
#include "tools/synthetic.h"
#include "util/error.h"

namespace pagoda::tools {
using cli::Command;

Command add_synth(CLI::App& app) {
  struct Opts {
    std::string shape, out, type = "f16", expert_type;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("synth", "Write a synthetic model of a benchmark shape (random weights)");
  cmd->add_option("shape", o->shape,
                  "10m, 100m, 1b, 8b, 30b-a3b, 30b-a3b-full, gpt-oss-20b, gpt-oss-20b-full, 10m-hybrid, 9b-hybrid, "
                  "35b-a3b-hybrid")
      ->required();
  cmd->add_option("output", o->out, "Output GGUF file")->required();
  cmd->add_option("--type", o->type, "Type of every matrix: f32, f16, bf16, q8_0, q4_0, q4_k, ...")
      ->capture_default_str();
  cmd->add_option("--expert-type", o->expert_type,
                  "Type of the experts' matrices, when not --type (llama.cpp's MXFP4_MOE: --type q8_0 --expert-type "
                  "mxfp4)");
  return {cmd, [o] {
            const auto type = tensor_type_from_name(o->type);
            if (!type) fail<InvalidArgument>("unknown tensor type '{}'", o->type);
            SyntheticModelSpec spec = benchmark_shape(o->shape);
            spec.type = *type;
            if (!o->expert_type.empty()) {
              spec.expert_type = tensor_type_from_name(o->expert_type);
              if (!spec.expert_type) fail<InvalidArgument>("unknown tensor type '{}'", o->expert_type);
            }
            synthetic_model(spec).write(o->out);
            fmt::print("wrote {}: {} ({}, {} layers, {} wide) in {}{}\n", o->out, o->shape, spec.arch, spec.n_layer,
                       spec.n_embd, tensor_type_name(*type),
                       spec.expert_type ? fmt::format(", experts in {}", tensor_type_name(*spec.expert_type)) : "");
            return 0;
          }};
}

}  // namespace pagoda::tools
