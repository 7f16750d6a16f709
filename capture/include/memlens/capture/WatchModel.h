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
//
// Categories. With a watched model (and, with watchOptimizer, its optimizer) every allocator
// snapshot's info carries `categories` as the Python agent writes them: the storages of the
// parameters, gradients and optimizer state (Adam/AdamW, SGD, RMSprop, Adagrad, LBFGS) by
// address, so the window and `memlens-cli check` show exact categories instead of estimates.
#include <nlohmann/json.hpp>

#include <memory>

namespace torch::nn {
class Module;
}
namespace torch::optim {
class Optimizer;
}

namespace memlens::capture {

class Session;

void watchModel(const std::shared_ptr<torch::nn::Module>& model);
void unwatchModel();  // the model and the optimizer

// The optimizer whose state is tagged. Held by reference: call unwatchModel(), or watch another,
// before it goes away.
void watchOptimizer(torch::optim::Optimizer& optimizer);

namespace detail {
// Called by Session::step after iteration INDEX ended: the `forward` marker of that iteration.
void recordModelAfterStep(Session& session, int64_t index);
// {"parameter": [[data_ptr, bytes], ...], "gradient", "optimizer_state", "input"}: the storages of
// the watched model and optimizer, each once, in that order of precedence; an empty object when
// nothing is watched.
nlohmann::json watchedCategories();
} // namespace detail

} // namespace memlens::capture
