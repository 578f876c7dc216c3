// A mixture-of-experts FFN over a batch (model/config.h MoeSpec): route each
// token to its k experts, then run every expert the batch chose once, over
// just the tokens that chose it, so a batch-1 decode reads k experts' weights
// and a batch reads each chosen expert once.
//
// The result does not depend on the batch: each token's k expert outputs are
// kept apart (one row per token and choice) and summed in the order the
// router ranked them, whatever other tokens chose.
#pragma once

#include <cmath>
#include <vector>

#include "model/config.h"
#include "model/ops.h"
#include "model/weights.h"
#include "util/thread_pool.h"

namespace pagoda {

// One of a token's k experts and the weight of its output.
struct ExpertChoice {
  int expert = 0;
  float weight = 0;
};

// logits: n_tokens x n_expert router outputs; choices: n_tokens x n_used,
// each token's ranked best first (ties: the lower expert index first).
void route_tokens(const MoeSpec& moe, const float* logits, int n_tokens, ExpertChoice* choices);

class MoeFfn {
 public:
  // out (n_tokens x n_embd) = for each token of x (n_tokens x n_embd), the
  // weighted sum over its chosen experts e of down_e(act(gate_e(x)) * up_e(x)).
  // The router reads router_x (n_tokens x n_embd) where given, else x.
  void forward(const LayerWeights& lw, const ModelConfig& c, const float* x, int n_tokens, float* out, ThreadPool& pool,
               const float* router_x = nullptr);

  // Distinct experts the last forward ran (its layer's).
  int experts_run() const { return experts_run_; }
  // The closest call of the last forward's routing: over its tokens, the
  // smallest gap between the k-th chosen expert's router logit and the best
  // unchosen one (+inf with every expert chosen). Two computations of a
  // model may route a token differently where this is within their rounding.
  float router_margin() const { return router_margin_; }

 private:
  void add_shared_expert(const LayerWeights& lw, const ModelConfig& c, const float* x, int n_tokens, float* out,
                         ThreadPool& pool);

  std::vector<float> logits_;            // n_tokens x n_expert
  std::vector<ExpertChoice> choices_;    // n_tokens x n_used
  std::vector<std::vector<int>> users_;  // per expert: the (token * n_used + rank) slots that chose it
  AlignedFloats xe_, gate_, up_, ye_;    // one expert's tokens: inputs (n x n_embd), hidden (n x moe.n_ff) x2, outputs
  AlignedFloats slots_;                  // n_tokens x n_used x n_embd: each choice's output, weighted
  int experts_run_ = 0;
  float router_margin_ = INFINITY;
};

}  // namespace pagoda
