#pragma once
// The doctor's evidence from a C++ (LibTorch) program: the model whose parameters it watches.
//
//   auto net = std::make_shared<Net>();
//   memlens::capture::watchModel(net);          // once
//   for (...) { ...; optimizer.step(); capture.step(); }
//
// At every Session::step() the session records a `forward` marker for the iteration that ended,
// in the Python agent's format (capture/README.md, "What the doctor records"): the model's
// parameters (count, bytes), whether it is in training mode and grad mode is on, and the
// gradients that were NOT freed since the previous step: the same gradient tensors, zeroed in
// place (torch::optim::Optimizer::zero_grad() in LibTorch 1.x, Module::zero_grad(false)), held
// through the whole iteration, its forward pass included. `memlens-cli check` reads them as the
// `grads-kept` rule. Gradients set to None between steps (Module::zero_grad(true)) are new tensors
// at every step and are not counted.
//
// The model is held weakly; watching another replaces it. Thread-safe.
#include <memory>

namespace torch::nn {
class Module;
}

namespace memlens::capture {

class Session;

void watchModel(const std::shared_ptr<torch::nn::Module>& model);
void unwatchModel();

namespace detail {
// Called by Session::step after iteration INDEX ended: the `forward` marker of that iteration.
void recordModelAfterStep(Session& session, int64_t index);
} // namespace detail

} // namespace memlens::capture
