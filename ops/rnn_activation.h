// The activations of ONNX's recurrent layers (RNN, GRU, LSTM and ONNX Runtime's
// DynamicQuantizeLSTM): their names, defaults and alpha/beta lists, shared by every kernel that
// reads the `activations`, `activation_alpha`, `activation_beta` and `clip` attributes.
#ifndef WEFT_OPS_RNN_ACTIVATION_H_
#define WEFT_OPS_RNN_ACTIVATION_H_

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "op_util.h"

namespace weft::ops {

struct RnnActivation {
  std::string name;
  float alpha = 0, beta = 0;
  bool sigmoid = false, tanh = false;  // set with the name, for the vectorized paths
  double operator()(double x) const {
    if (name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
    if (name == "Tanh") return std::tanh(x);
    if (name == "Relu") return std::max(0.0, x);
    if (name == "HardSigmoid") return std::clamp(alpha * x + beta, 0.0, 1.0);
    if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
    if (name == "ThresholdedRelu") return x > alpha ? x : 0.0;
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    if (name == "Affine") return alpha * x + beta;
    if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1);
    if (name == "Softsign") return x / (1 + std::fabs(x));
    if (name == "Softplus") return std::log1p(std::exp(x));
    return NAN;
  }
};

// The activation's kind in the generated C (weft_rnn_act in ops/aot/rnn.c), or -1.
inline int RnnActivationCKind(const std::string& n) {
  static const char* const kKinds[] = {"Sigmoid", "Tanh", "Relu", "HardSigmoid", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "Affine",
                                       "Elu", "Softsign", "Softplus"};
  for (int k = 0; k < 11; ++k)
    if (n == kKinds[k]) return k;
  return -1;
}

inline bool KnownRnnActivation(const std::string& n) {
  for (const char* k : {"Sigmoid", "Tanh", "Relu", "HardSigmoid", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "Affine", "Elu",
                        "Softsign", "Softplus"})
    if (n == k) return true;
  return false;
}

// Per direction `per_dir` activations (f, g and h for LSTM; f, g for GRU; f for RNN), alpha/beta
// consumed in order by the activations that take them. Defaults: Sigmoid for f where
// `sigmoid_first`, Tanh for the rest. Also checks `clip` (absent or 0: none).
inline bool ParseRnnActivations(const KernelContextBase* ctx, int per_dir, int64_t dirs, bool sigmoid_first,
                                std::vector<RnnActivation>* acts, std::string* err) {
  const RuntimeAttrs* a = ctx->GetAttrs();
  ListView<const char*> names = a->GetListString("activations");
  ListView<float> alphas = a->GetListFloat("activation_alpha"), betas = a->GetListFloat("activation_beta");
  if (names.size() != 0 && names.size() != static_cast<size_t>(per_dir * dirs)) {
    *err = "activations lists " + std::to_string(names.size()) + " names; it needs " + std::to_string(per_dir) + " per direction (" +
           std::to_string(per_dir * dirs) + " for " + std::to_string(dirs) + " direction(s)) or none for the defaults";
    return false;
  }
  if (*a->GetFloat("clip") < 0) {
    *err = "clip must be positive (0 or absent: no clipping), not " + std::to_string(*a->GetFloat("clip"));
    return false;
  }
  size_t ai = 0, bi = 0;
  for (int64_t k = 0; k < per_dir * dirs; ++k) {
    RnnActivation act;
    act.name = names.size() > static_cast<size_t>(k) ? names[k] : (k % per_dir == 0 && sigmoid_first ? "Sigmoid" : "Tanh");
    act.sigmoid = act.name == "Sigmoid";
    act.tanh = act.name == "Tanh";
    if (!KnownRnnActivation(act.name)) {
      *err = "unknown activation '" + act.name + "'";
      return false;
    }
    bool takes_alpha = act.name == "HardSigmoid" || act.name == "LeakyRelu" || act.name == "ThresholdedRelu" || act.name == "ScaledTanh" ||
                       act.name == "Affine" || act.name == "Elu";
    bool takes_beta = act.name == "HardSigmoid" || act.name == "ScaledTanh" || act.name == "Affine";
    if (act.name == "HardSigmoid") act.alpha = 0.2f, act.beta = 0.5f;
    if (act.name == "LeakyRelu") act.alpha = 0.01f;
    if (act.name == "ThresholdedRelu" || act.name == "Elu") act.alpha = 1.0f;
    if (takes_alpha && ai < alphas.size()) act.alpha = alphas[ai++];
    if (takes_beta && bi < betas.size()) act.beta = betas[bi++];
    acts->push_back(act);
  }
  return true;
}

}  // namespace weft::ops

#endif  // WEFT_OPS_RNN_ACTIVATION_H_
