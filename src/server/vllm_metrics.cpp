#include "server/vllm_metrics.h"

#include <fmt/format.h>

namespace pagoda::server {
namespace {

// A label value with \, " and newline escaped (text format 0.0.4).
std::string escape_label(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

class Writer {
 public:
  Writer(std::string& out, const std::string& model)
      : out_(out), labels_(fmt::format("engine=\"0\",model_name=\"{}\"", escape_label(model))) {}

  void gauge(const char* name, double v, const char* help) {
    header(name, "gauge", help);
    sample(name, "", v);
  }
  // prometheus_client names a counter's family and sample NAME_total.
  void counter(const char* name, double v, const char* help) {
    const std::string total = std::string(name) + "_total";
    header(total.c_str(), "counter", help);
    sample(total.c_str(), "", v);
  }
  void histogram(const char* name, const BucketHistogram& h, const char* help) {
    header(name, "histogram", help);
    int64_t cumulative = 0;
    for (size_t i = 0; i < h.size; ++i) {
      cumulative += h.counts[i];
      out_ += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels_, bound(h.bounds[i]), cumulative);
    }
    out_ += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels_, h.count);
    out_ += fmt::format("{}_count{{{}}} {}\n{}_sum{{{}}} {}\n", name, labels_, h.count, name, labels_, h.sum);
  }
  void header(const char* name, const char* type, const char* help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void sample(const char* name, const std::string& extra, double v) {
    out_ += fmt::format("{}{{{}{}}} {}\n", name, labels_, extra, v);
  }

 private:
  // prometheus_client writes bounds as Python floats: 1.0, 0.25, 2560.0.
  static std::string bound(double b) {
    std::string s = fmt::format("{}", b);
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
  }
  std::string& out_;
  std::string labels_;
};

}  // namespace

void render_vllm_metrics(std::string& out, const EngineStats& s, const ServerFigures& f, const VllmInfo& info) {
  const RequestMetrics& r = s.per_request;
  Writer w(out, info.model_name);
  w.gauge("vllm:num_requests_running", s.running, "Number of requests in model execution batches.");
  w.gauge("vllm:num_requests_waiting", double(s.waiting + f.inbox), "Number of requests waiting to be processed.");
  w.gauge("vllm:kv_cache_usage_perc", s.kv_usage, "KV-cache usage. 1 means 100 percent usage.");
  // An info series: labels only, value 1; vLLM gives it no model_name.
  w.header("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
  out += fmt::format(
      "vllm:cache_config_info{{block_size=\"{}\",cache_dtype=\"auto\",enable_prefix_caching=\"{}\",engine=\"0\","
      "num_cpu_blocks=\"None\",num_gpu_blocks=\"{}\"}} 1\n",
      info.block_size, info.prefix_caching ? "True" : "False", s.kv_blocks_total);
  w.counter("vllm:prefix_cache_queries", double(s.prefix_queries),
            "Prefix cache queries, in terms of number of queried tokens.");
  w.counter("vllm:prefix_cache_hits", double(s.prefix_hits), "Prefix cache hits, in terms of number of cached tokens.");
  w.counter("vllm:num_preemptions", double(s.preemptions), "Cumulative number of preemption from the engine.");
  w.counter("vllm:prompt_tokens", double(r.prompt_tokens), "Number of prefill tokens processed.");
  w.counter("vllm:generation_tokens", double(s.generation_tokens), "Number of generation tokens processed.");
  w.header("vllm:request_success_total", "counter", "Count of successfully processed requests.");
  w.sample("vllm:request_success_total", ",finished_reason=\"stop\"", double(s.finished_stop));
  w.sample("vllm:request_success_total", ",finished_reason=\"length\"", double(s.finished_length));
  w.sample("vllm:request_success_total", ",finished_reason=\"abort\"", double(s.aborted + s.timed_out));
  w.sample("vllm:request_success_total", ",finished_reason=\"error\"", double(s.errored));
  w.histogram("vllm:request_prompt_tokens", r.request_prompt_tokens, "Number of prefill tokens processed.");
  w.histogram("vllm:request_generation_tokens", r.request_generation_tokens, "Number of generation tokens processed.");
  w.histogram("vllm:iteration_tokens_total", r.iteration_tokens, "Histogram of number of tokens per engine_step.");
  w.histogram("vllm:time_to_first_token_seconds", r.ttft, "Histogram of time to first token in seconds.");
  w.histogram("vllm:inter_token_latency_seconds", r.itl, "Histogram of inter-token latency in seconds.");
  w.histogram("vllm:e2e_request_latency_seconds", r.e2e, "Histogram of e2e request latency in seconds.");
  w.histogram("vllm:request_queue_time_seconds", r.queue_time, "Histogram of time spent in WAITING phase for request.");
  w.histogram("vllm:request_inference_time_seconds", r.inference_time,
              "Histogram of time spent in RUNNING phase for request.");
  w.histogram("vllm:request_prefill_time_seconds", r.prefill_time,
              "Histogram of time spent in PREFILL phase for request.");
  w.histogram("vllm:request_decode_time_seconds", r.decode_time,
              "Histogram of time spent in DECODE phase for request.");
}

}  // namespace pagoda::server
