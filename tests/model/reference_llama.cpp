#include "model/reference_llama.h"

#include <cmath>
#include <string>

#include "model/ops.h"
#include "quant/dot.h"
#include "quant/rows.h"

namespace pagoda::testing {

ReferenceLlama::Dense ReferenceLlama::decode(const Matrix& m) {
  Dense d{m.rows, m.cols, m.type, std::vector<float>(size_t(m.rows) * m.cols)};
  for (int r = 0; r < m.rows; ++r) read_row(m, r, &d.w[size_t(r) * m.cols]);  // row-major or in panels
  return d;
}

std::vector<float> ReferenceLlama::matvec(const Dense& m, const std::vector<float>& x_in) {
  std::vector<float> x = x_in;
  if (has_quantized_dot(m.type)) {
    const TensorType a = activation_type(m.type);
    const auto q = quantize(a, x_in.data(), x_in.size());
    dequantize_row(a, q.data(), x.data(), x.size());
  }
  std::vector<float> y(size_t(m.rows));
  for (int r = 0; r < m.rows; ++r) {
    double s = 0;
    for (int c = 0; c < m.cols; ++c) s += double(m.w[size_t(r) * m.cols + c]) * x[size_t(c)];
    y[size_t(r)] = float(s);
  }
  return y;
}

namespace {

// A 1-D tensor of the file as floats, or empty if the file has none.
std::vector<float> file_vector(const GgufFile& f, const std::string& name) {
  const TensorInfo* t = f.find_tensor(name);
  if (!t) return {};
  std::vector<float> v(size_t(t->n_elements));
  dequantize_row(t->type, t->data, v.data(), v.size());
  return v;
}

}  // namespace

ReferenceLlama::ReferenceLlama(const Model& model, const Options& options)
    : cfg_(model.config()), lw_(&model.weights()) {
  embd_ = decode(lw_->token_embd);
  output_ = decode(lw_->output);
  for (const auto& l : lw_->layers)
    layers_.push_back(
        {decode(l.wq), decode(l.wk), decode(l.wv), decode(l.wo), decode(l.w_gate), decode(l.w_up), decode(l.w_down)});
  const GgufFile& f = model.file();
  for (int l = 0; l < cfg_.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    biases_.push_back(
        {file_vector(f, p + "attn_q.bias"), file_vector(f, p + "attn_k.bias"), file_vector(f, p + "attn_v.bias")});
  }
  const std::string arch = f.get_string("general.architecture");
  neox_ = options.rope_layout ? *options.rope_layout == RopeLayout::NeoX : arch == "qwen2";
  freq_factors_ = file_vector(f, "rope_freqs.weight");
  if (f.get_string(arch + ".rope.scaling.type", "none") == "linear")
    position_divisor_ = f.get_f64(arch + ".rope.scaling.factor");
}

namespace {

std::vector<float> rmsnorm(const std::vector<float>& x, const std::vector<float>& w, float eps) {
  double ss = 0;
  for (float v : x) ss += double(v) * v;
  const double scale = 1.0 / std::sqrt(ss / double(x.size()) + eps);
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = float(x[i] * scale * w[i]);
  return y;
}

void add(std::vector<float>& x, const std::vector<float>& bias) {
  for (size_t i = 0; i < bias.size(); ++i) x[i] += bias[i];
}

// Rotates pair j of every head by (pos / divisor) / base^(2j/dims) / factor[j];
// pair j is (2j, 2j+1), or (j, j + dims/2) in the NeoX layout.
void rope(std::vector<float>& x, int head_dim, int dims, double pos, float base, bool neox,
          const std::vector<float>& factors) {
  for (size_t h = 0; h < x.size() / size_t(head_dim); ++h)
    for (int j = 0; j < dims / 2; ++j) {
      double angle = pos / std::pow(double(base), 2.0 * j / dims);
      if (!factors.empty()) angle /= factors[size_t(j)];
      const size_t first = neox ? size_t(j) : size_t(2 * j), second = neox ? size_t(j + dims / 2) : size_t(2 * j + 1);
      float& a = x[h * head_dim + first];
      float& b = x[h * head_dim + second];
      const double a0 = a, b0 = b;
      a = float(a0 * std::cos(angle) - b0 * std::sin(angle));
      b = float(a0 * std::sin(angle) + b0 * std::cos(angle));
    }
}

}  // namespace

std::vector<std::vector<float>> ReferenceLlama::run(const std::vector<int32_t>& tokens) const {
  const int E = cfg_.n_embd, hd = cfg_.head_dim;
  // Dense cache: keys[layer][pos] holds all KV heads of one position.
  std::vector<std::vector<std::vector<float>>> keys(size_t(cfg_.n_layer)), values(size_t(cfg_.n_layer));
  std::vector<std::vector<float>> out;
  for (size_t pos = 0; pos < tokens.size(); ++pos) {
    std::vector<float> x(embd_.w.begin() + long(tokens[pos]) * E, embd_.w.begin() + long(tokens[pos] + 1) * E);
    for (int l = 0; l < cfg_.n_layer; ++l) {
      const auto& L = layers_[size_t(l)];
      const auto xn = rmsnorm(x, lw_->layers[size_t(l)].attn_norm, cfg_.rms_eps);
      auto q = matvec(L[0], xn), k = matvec(L[1], xn), v = matvec(L[2], xn);
      const auto& B = biases_[size_t(l)];
      add(q, B[0]);
      add(k, B[1]);
      add(v, B[2]);
      const double p = double(pos) / position_divisor_;
      rope(q, hd, cfg_.rope.dims, p, cfg_.rope.base, neox_, freq_factors_);
      rope(k, hd, cfg_.rope.dims, p, cfg_.rope.base, neox_, freq_factors_);
      keys[size_t(l)].push_back(k);
      values[size_t(l)].push_back(v);
      std::vector<float> att(size_t(cfg_.q_dim()), 0.0f);
      for (int h = 0; h < cfg_.n_head; ++h) {
        const int g = h / (cfg_.n_head / cfg_.n_head_kv);
        std::vector<double> w(pos + 1);
        double max = -1e300;
        for (size_t p = 0; p <= pos; ++p) {
          double s = 0;
          for (int d = 0; d < hd; ++d) s += double(q[size_t(h * hd + d)]) * keys[size_t(l)][p][size_t(g * hd + d)];
          w[p] = s / std::sqrt(double(hd));
          max = std::max(max, w[p]);
        }
        double sum = 0;
        for (double& s : w) sum += (s = std::exp(s - max));
        for (int d = 0; d < hd; ++d) {
          double acc = 0;
          for (size_t p = 0; p <= pos; ++p) acc += w[p] / sum * values[size_t(l)][p][size_t(g * hd + d)];
          att[size_t(h * hd + d)] = float(acc);
        }
      }
      const auto o = matvec(L[3], att);
      for (int i = 0; i < E; ++i) x[size_t(i)] += o[size_t(i)];
      const auto xf = rmsnorm(x, lw_->layers[size_t(l)].ffn_norm, cfg_.rms_eps);
      auto gate = matvec(L[4], xf);
      const auto up = matvec(L[5], xf);
      for (size_t i = 0; i < gate.size(); ++i) gate[i] = float(gate[i] / (1.0 + std::exp(-double(gate[i]))) * up[i]);
      const auto down = matvec(L[6], gate);
      for (int i = 0; i < E; ++i) x[size_t(i)] += down[size_t(i)];
    }
    out.push_back(matvec(output_, rmsnorm(x, lw_->output_norm, cfg_.rms_eps)));
  }
  return out;
}

}  // namespace pagoda::testing
