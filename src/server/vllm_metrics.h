// vLLM's Prometheus series beside Pagoda's own on GET /metrics, so the
// routers that read vLLM's (the Gateway API Inference Extension's endpoint
// picker, llm-d, dashboards built for vLLM) read Pagoda without flags.
// Names, types, label sets and bucket boundaries are vLLM's
// (vllm/v1/metrics/loggers.py) as prometheus_client writes them on the wire:
// counters carry the _total suffix in # TYPE and samples, every series but
// cache_config_info has the labels model_name and engine="0".
//
// Semantics where vLLM's differ from the pagoda_* twin:
//   vllm:num_requests_waiting    counts requests not yet taken by the engine too
//                                (as pagoda_num_requests_waiting does)
//   vllm:prompt_tokens_total     prompt tokens of requests whose prefill ended
//                                (pagoda_prompt_tokens_total counts on arrival)
//   vllm:request_success_total   every request the engine ended, by reason:
//                                stop, length, abort (aborts and timeouts), error
#pragma once

#include <cstdint>
#include <string>

#include "engine/stats.h"
#include "server/metrics.h"

namespace pagoda::server {

// What the series say beside the engine's figures.
struct VllmInfo {
  std::string model_name;  // the served model name (label model_name)
  int32_t block_size = 16;
  bool prefix_caching = true;
};

// Appends vLLM's series to `out` (Prometheus text, format 0.0.4).
void render_vllm_metrics(std::string& out, const EngineStats& s, const ServerFigures& f, const VllmInfo& info);

}  // namespace pagoda::server
