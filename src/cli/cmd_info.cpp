// `pagoda info`: what a GGUF model is — architecture, shape, weight types,
// tokenizer and chat template — without running it.
#include <algorithm>
#include <fmt/format.h>

#include <map>
#include <set>
#include <vector>

#include "cli/commands.h"
#include "cli/model_option.h"
#include "chat/template_source.h"
#include "gguf/file.h"
#include "model/config.h"
#include "quant/rows.h"
#include "server/tool_parser_choice.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace pagoda::cli {

Command add_info(CLI::App& app) {
  struct Opts {
    ModelOption model;
    bool metadata = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("info", "Describe a GGUF model");
  o->model.add(cmd);
  cmd->add_flag("--metadata", o->metadata, "Also list every metadata key");
  return {
      cmd, [o] {
        const std::string path = o->model.resolve();
        const auto f = GgufFile::open(path);
        fmt::print("file:            {} (GGUF v{}, {} tensors{})\n", path, f.version(), f.tensors().size(),
                   f.parts() > 1 ? fmt::format(" in {} split files", f.parts()) : "");
        uint64_t params = 0, bytes = 0;
        std::map<std::string, int> types;
        std::set<std::string> unsupported_types;
        for (const auto& t : f.tensors()) {
          params += t.n_elements;
          bytes += t.n_bytes;
          types[std::string(tensor_type_name(t.type))]++;
          if (!weight_type_supported(t.type)) unsupported_types.insert(std::string(tensor_type_name(t.type)));
        }
        // Why Pagoda cannot run this file, if it cannot: info still describes it, then exits 1.
        std::vector<std::string> refusals;
        if (!unsupported_types.empty())
          refusals.push_back(fmt::format("tensor types {} are not supported (supported: {})",
                                         fmt::join(unsupported_types, ", "), supported_weight_types()));
        std::string type_list;
        for (const auto& [name, n] : types)
          type_list += fmt::format("{}{} x{}", type_list.empty() ? "" : ", ", name, n);
        fmt::print("parameters:      {:.2f} M ({:.1f} MiB of weights)\n", double(params) / 1e6,
                   double(bytes) / 1048576);
        fmt::print("weight types:    {}\n", type_list);
        try {
          const auto c = ModelConfig::from_gguf(f);
          fmt::print("architecture:    {}{}\n", c.arch, c.name.empty() ? "" : " (" + c.name + ")");
          fmt::print("layers:          {}\nwidth:           {}\nffn width:       {}\n", c.n_layer, c.n_embd, c.n_ff);
          fmt::print("heads:           {} query, {} key/value, head size {}\n", c.n_head, c.n_head_kv, c.head_dim);
          fmt::print(
              "context:         {} tokens\nrope:            {}, base {}, {} dims, scaling {}{}\n"
              "rms epsilon:     {}\n",
              c.n_ctx_train, c.rope.enabled ? rope_layout_name(c.rope.layout) : "none (learned positions)", c.rope.base,
              c.rope.dims, rope_scaling_name(c.rope.scaling),
              c.rope.scaling == RopeScaling::None ? "" : fmt::format(" x{}", c.rope.factor), c.rms_eps);
          fmt::print("block:           {} {}{}{}, {}{}\n", norm_placement_name(c.norms),
                     c.norm_kind == NormKind::Layer ? "LayerNorms" : "norms",
                     c.qk_norm == QkNorm::None ? "" : ", Q/K norm", c.attn_sinks ? ", attention sinks" : "",
                     activation_name(c.act), c.causal ? "" : ", non-causal attention (an encoder)");
          if (c.moe.n_expert > 0)
            fmt::print("experts:         {} of {} a token, each {} wide, routing {}{}{}\n", c.moe.n_used,
                       c.moe.n_expert, c.moe.n_ff, expert_gating_name(c.moe.gating),
                       c.moe.normalize ? ", weights normalised" : "",
                       c.moe.scale == 1.0f ? "" : fmt::format(", scaled x{}", c.moe.scale));
          if (c.moe.n_ff_shared > 0) fmt::print("shared expert:   {} wide, gated\n", c.moe.n_ff_shared);
          if (c.moe.dense_beside)
            fmt::print("dense MLP:       {} wide beside the experts, each branch normed\n", c.n_ff);
          if (const int n = c.n_recurrent_layers(); n > 0) {
            const DeltaNetSpec& d = c.delta_net;
            fmt::print(
                "recurrent:       {} of {} layers Gated DeltaNet ({} key heads, {} value heads of {}, conv {}); "
                "state {:.1f} MiB a sequence (x2 buffers), no prefix caching\n",
                n, c.n_layer, d.n_k_heads, d.n_v_heads, d.head_v_dim, d.conv_kernel, double(c.state_bytes()) / 1048576);
          }
          if (c.n_embd_per_layer > 0)
            fmt::print("per-layer input: {} wide a layer ({} a token)\n", c.n_embd_per_layer,
                       c.n_embd_per_layer * c.n_layer);
          if (std::any_of(c.layers.begin(), c.layers.end(), [&](const LayerSpec& l) {
                return l.head_dim != c.head_dim || l.n_head != c.n_head || l.n_head_kv != c.n_head_kv;
              })) {
            std::string shapes;
            for (const LayerSpec& l : c.layers)
              shapes += fmt::format("{}{}x{}/{}", shapes.empty() ? "" : " ", l.n_head, l.head_dim, l.n_head_kv);
            fmt::print("layer heads:     {} (query heads x size / KV heads)\n", shapes);
          }
          if (std::any_of(c.layers.begin(), c.layers.end(), [](const LayerSpec& l) { return l.kv_source >= 0; })) {
            std::string shared;
            for (int l = 0; l < c.n_layer; ++l)
              if (const int src = c.layers[size_t(l)].kv_source; src >= 0)
                shared += fmt::format("{}{}<-{}", shared.empty() ? "" : ", ", l, src);
            fmt::print("shared KV:       layers {} (reader<-source: no K/V of their own)\n", shared);
          }
          if (c.pooling != Pooling::none)
            fmt::print("pooling:         {} ({}, serves {})\n", pooling_name(c.pooling),
                       c.pooling == Pooling::rank ? "a reranker" : "an embedding model",
                       c.pooling == Pooling::rank ? "/v1/rerank" : "/v1/embeddings");
          if (const int sliding =
                  int(std::count_if(c.layers.begin(), c.layers.end(), [](const LayerSpec& l) { return l.window > 0; })))
            fmt::print("sliding window:  {} of {} layers, {} positions\n", sliding, c.n_layer,
                       std::max_element(c.layers.begin(), c.layers.end(), [](const LayerSpec& a, const LayerSpec& b) {
                         return a.window < b.window;
                       })->window);
        } catch (const Error& e) {
          fmt::print("architecture:    {}\n", f.get_string("general.architecture", "?"));
          refusals.push_back(e.what());
        }
        try {
          const auto tok = Tokenizer::from_gguf(f);
          fmt::print("tokenizer:       {}, {} tokens, bos {}, eos {}, add bos {}\n", tok.model_name(), tok.vocab_size(),
                     tok.bos_id(), tok.eos_id(), tok.add_bos_by_default());
          fmt::print("end of gen ids:  {}\n", fmt::join(tok.end_of_generation_ids(), " "));
        } catch (const Error& e) {
          fmt::print("tokenizer:       unavailable ({})\n", e.what());
        }
        const std::string tmpl = f.get_string("tokenizer.chat_template", "");
        const SelectedChatTemplate chat = select_chat_template(f);
        fmt::print("chat template:   {}{}\n", chat.source, tmpl.empty() ? "" : fmt::format(", {} bytes", tmpl.size()));
        if (!chat.error.empty()) fmt::print("                 unusable: {}\n", chat.error);
        const auto tool = server::choose_tool_parser("auto", path, std::nullopt);
        fmt::print("tool parser:     {}\n", tool.how);
        fmt::print("reasoning:       {}\n",
                   server::choose_reasoning_parser("auto", path, std::nullopt, tool.format).how);
        if (!tmpl.empty()) fmt::print("{}\n", tmpl);
        if (o->metadata)
          for (const auto& [k, v] : f.metadata()) fmt::print("  {} = {}\n", k, v.to_display());
        for (const auto& why : refusals) fmt::print(stderr, "pagoda cannot run this file: {}\n", why);
        return refusals.empty() ? 0 : 1;
      }};
}

}  // namespace pagoda::cli
