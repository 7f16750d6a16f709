// The watched model's evidence for the doctor (WatchModel.h).
#include "memlens/capture/WatchModel.h"

#include "memlens/capture/Session.h"

#include <torch/torch.h>

#include <mutex>
#include <set>
#include <unordered_map>

namespace memlens::capture {

namespace {

std::mutex gModelMu;
std::weak_ptr<torch::nn::Module> gModel;
// each gradient tensor seen at the previous step, held weakly: one that was freed since (set to
// None) has expired, even if a new tensor now sits at its address
using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;
std::unordered_map<const c10::TensorImpl*, WeakImpl> gPreviousGrads;
bool gSeenStep = false;
torch::optim::Optimizer* gOptimizer = nullptr;

uint64_t storageBytes(const at::Tensor& t) {
    return t.defined() && t.has_storage() ? static_cast<uint64_t>(t.storage().nbytes()) : 0;
}

// The tensors an optimizer keeps per parameter, for the optimizers LibTorch ships.
std::vector<at::Tensor> stateTensors(torch::optim::OptimizerParamState& s) {
    using namespace torch::optim;
    if (auto* a = dynamic_cast<AdamParamState*>(&s)) return {a->exp_avg(), a->exp_avg_sq(), a->max_exp_avg_sq()};
    if (auto* a = dynamic_cast<AdamWParamState*>(&s)) return {a->exp_avg(), a->exp_avg_sq(), a->max_exp_avg_sq()};
    if (auto* a = dynamic_cast<SGDParamState*>(&s)) return {a->momentum_buffer()};
    if (auto* a = dynamic_cast<RMSpropParamState*>(&s)) return {a->square_avg(), a->momentum_buffer(), a->grad_avg()};
    if (auto* a = dynamic_cast<AdagradParamState*>(&s)) return {a->sum()};
    if (auto* a = dynamic_cast<LBFGSParamState*>(&s)) {
        std::vector<at::Tensor> out = {a->d(), a->H_diag(), a->prev_flat_grad()};
        for (const auto& t : a->old_dirs()) out.push_back(t);
        for (const auto& t : a->old_stps()) out.push_back(t);
        return out;
    }
    return {};
}

std::string deviceText(const at::Tensor& t) {
    const c10::Device d = t.device();
    return d.is_cuda() ? "cuda:" + std::to_string(d.index() < 0 ? 0 : d.index()) : d.str();
}

} // namespace

void watchModel(const std::shared_ptr<torch::nn::Module>& model) {
    std::lock_guard<std::mutex> lock(gModelMu);
    gModel = model;
    gPreviousGrads.clear();
    gSeenStep = false;
    if (!model) gOptimizer = nullptr;
}

void unwatchModel() { watchModel(nullptr); }

void watchOptimizer(torch::optim::Optimizer& optimizer) {
    std::lock_guard<std::mutex> lock(gModelMu);
    gOptimizer = &optimizer;
}

namespace detail {

void recordModelAfterStep(Session& session, int64_t index) {
    nlohmann::json data;
    {
        std::lock_guard<std::mutex> lock(gModelMu);
        const std::shared_ptr<torch::nn::Module> model = gModel.lock();
        if (!model) return;
        uint64_t paramCount = 0, paramBytes = 0, keptCount = 0, keptBytes = 0;
        std::string device;
        std::unordered_map<const c10::TensorImpl*, WeakImpl> grads;
        for (const at::Tensor& p : model->parameters()) {
            ++paramCount;
            paramBytes += storageBytes(p);
            if (device.empty()) device = deviceText(p);
            const at::Tensor& g = p.grad();
            if (!g.defined()) continue;
            const c10::TensorImpl* impl = g.unsafeGetTensorImpl();
            grads.emplace(impl, WeakImpl(g.getIntrusivePtr()));
            // the same gradient tensor as at the previous step: never freed in between
            const auto previous = gPreviousGrads.find(impl);
            if (gSeenStep && previous != gPreviousGrads.end() && previous->second.lock().get() == impl) {
                ++keptCount;
                keptBytes += storageBytes(g);
            }
        }
        gPreviousGrads = std::move(grads);
        gSeenStep = true;
        data = {{"module", model->name()},
                {"training", model->is_training()},
                {"grad_enabled", at::GradMode::is_enabled()},
                {"inference_mode", false},
                {"device", device},
                {"output_requires_grad", false},
                {"output_bytes", 0},
                {"saved_bytes", 0},
                {"grads", {{"count", keptCount}, {"bytes", keptBytes}}},
                {"params", {{"count", paramCount}, {"bytes", paramBytes}}},
                {"inputs", nlohmann::json::array()},
                {"previous_inputs", {{"count", 0}, {"bytes", 0}}},
                {"source", "libtorch: at the step that ended the iteration"}};
    }
    session.forwardMarker(index, data);
}

nlohmann::json watchedCategories() {
    std::lock_guard<std::mutex> lock(gModelMu);
    const std::shared_ptr<torch::nn::Module> model = gModel.lock();
    if (!model && !gOptimizer) return nlohmann::json::object();
    nlohmann::json out = {{"parameter", nlohmann::json::array()},
                          {"gradient", nlohmann::json::array()},
                          {"optimizer_state", nlohmann::json::array()},
                          {"input", nlohmann::json::array()}};
    std::set<std::pair<int, uintptr_t>> seen;
    auto add = [&](const char* category, const at::Tensor& t) {
        if (!t.defined() || !t.has_storage()) return;
        const auto ptr = reinterpret_cast<uintptr_t>(t.storage().data());
        if (!ptr || !seen.emplace(t.get_device(), ptr).second) return;
        out[category].push_back({ptr, static_cast<uint64_t>(t.storage().nbytes())});
    };
    std::vector<at::Tensor> params;
    if (model)
        for (const at::Tensor& p : model->parameters()) params.push_back(p);
    if (gOptimizer)
        for (const auto& group : gOptimizer->param_groups())
            for (const at::Tensor& p : group.params()) params.push_back(p);
    for (const at::Tensor& p : params) add("parameter", p);
    for (const at::Tensor& p : params) add("gradient", p.grad());
    if (gOptimizer)
        for (auto& [key, state] : gOptimizer->state())
            if (state)
                for (const at::Tensor& t : stateTensors(*state)) add("optimizer_state", t);
    return out;
}

} // namespace detail

} // namespace memlens::capture
