#include "memlens/model/MemoryCategory.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string_view>

namespace memlens::model {

namespace {

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }
bool endsWith(std::string_view s, std::string_view tail) {
    return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

StackRole roleOfFrame(std::string_view file, std::string_view name) {
    if (contains(file, "/torch/optim/")) return StackRole::Optimizer;
    if (endsWith(file, "torch/nn/modules/module.py") &&
        (name == "_apply" || name == "to" || name == "cuda" || name == "convert" || name == "half" || name == "float"))
        return StackRole::ModuleSetup;
    if (endsWith(file, "torch/nn/parameter.py")) return StackRole::ModuleSetup;
    if (contains(file, "/torch/nn/modules/") && (name == "__init__" || name == "reset_parameters"))
        return StackRole::ModuleSetup;
    if (contains(file, "/torch/utils/data/") || contains(name, "pin_memory")) return StackRole::DataLoading;
    if ((endsWith(file, "torch/_tensor.py") && name == "backward") || endsWith(file, "torch/autograd/__init__.py") ||
        (endsWith(file, "torch/autograd/graph.py") && name == "_engine_run_backward") ||
        contains(name, "autograd::Engine") || contains(name, "AccumulateGrad") ||
        contains(name, "autograd::generated::") || contains(name, "torch::autograd::call_function"))
        return StackRole::Backward;
    if ((name == "forward" && endsWith(file, ".py")) ||
        (endsWith(file, "torch/nn/modules/module.py") && (name == "_call_impl" || name == "_wrapped_call_impl")))
        return StackRole::Forward;
    return StackRole::Unknown;
}

int rank(StackRole r) {
    switch (r) {
    case StackRole::Optimizer: return 5;
    case StackRole::ModuleSetup: return 4;
    case StackRole::DataLoading: return 3;
    case StackRole::Backward: return 2;
    case StackRole::Forward: return 1;
    case StackRole::Unknown: return 0;
    }
    return 0;
}

} // namespace

const char* memoryCategoryName(MemoryCategory c) {
    switch (c) {
    case MemoryCategory::Parameter: return "parameter";
    case MemoryCategory::Gradient: return "gradient";
    case MemoryCategory::OptimizerState: return "optimizer_state";
    case MemoryCategory::SavedForBackward: return "saved_for_backward";
    case MemoryCategory::Input: return "input";
    case MemoryCategory::Other: return "other";
    }
    return "other";
}

const char* memoryCategoryLabel(MemoryCategory c) {
    switch (c) {
    case MemoryCategory::Parameter: return "Parameters";
    case MemoryCategory::Gradient: return "Gradients";
    case MemoryCategory::OptimizerState: return "Optimizer state";
    case MemoryCategory::SavedForBackward: return "Saved for backward";
    case MemoryCategory::Input: return "Input batches";
    case MemoryCategory::Other: return "Other";
    }
    return "Other";
}

const char* stackRoleName(StackRole r) {
    switch (r) {
    case StackRole::Unknown: return "unknown";
    case StackRole::Optimizer: return "optimizer";
    case StackRole::ModuleSetup: return "module_setup";
    case StackRole::DataLoading: return "data_loading";
    case StackRole::Backward: return "backward";
    case StackRole::Forward: return "forward";
    }
    return "unknown";
}

std::vector<StackRole> stackRoles(const Snapshot& s) {
    std::vector<StackRole> frameRole(s.frames.size());
    for (size_t f = 0; f < s.frames.size(); ++f)
        frameRole[f] = roleOfFrame(s.str(s.frames[f].filename), s.str(s.frames[f].name));
    std::vector<StackRole> out(s.stackCount(), StackRole::Unknown);
    for (StackId st = 0; st < s.stackCount(); ++st) {
        StackRole best = StackRole::Unknown;
        for (const FrameId* f = s.stackBegin(st); f != s.stackBegin(st) + s.stackSize(st); ++f)
            if (rank(frameRole[*f]) > rank(best)) best = frameRole[*f];
        out[st] = best;
    }
    return out;
}

MemoryCategory categoryOfRole(StackRole role) {
    switch (role) {
    case StackRole::Optimizer: return MemoryCategory::OptimizerState;
    case StackRole::ModuleSetup: return MemoryCategory::Parameter;
    case StackRole::DataLoading: return MemoryCategory::Input;
    case StackRole::Backward: return MemoryCategory::Gradient;
    case StackRole::Forward: return MemoryCategory::SavedForBackward;
    case StackRole::Unknown: return MemoryCategory::Other;
    }
    return MemoryCategory::Other;
}

CategoryTags categoryTags(const std::string& infoJson) {
    CategoryTags out;
    const nlohmann::json j = nlohmann::json::parse(infoJson, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return out;
    const auto c = j.find("categories");
    if (c == j.end() || !c->is_object()) return out;
    for (int k = 0; k < kMemoryCategoryCount; ++k) {
        const auto cat = static_cast<MemoryCategory>(k);
        const auto list = c->find(memoryCategoryName(cat));
        if (list == c->end() || !list->is_array()) continue;
        for (const auto& e : *list)
            if (e.is_array() && !e.empty() && e[0].is_number_unsigned()) out.emplace_back(e[0].get<uint64_t>(), cat);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first == b.first; }), out.end());
    return out;
}

CategoryBytes categoriesAt(const DeviceState& state, const std::vector<StackRole>& roles, const CategoryTags& tags) {
    if (tags.empty()) return categoriesAt(state, roles);
    CategoryBytes out;
    out.estimated = false;
    for (const StateSegment& seg : state.segments)
        for (const StateBlock& b : seg.blocks) {
            if (b.kind == StateBlockKind::Free || b.kind == StateBlockKind::PendingFree) continue;
            const uint64_t bytes = b.requestedSize ? std::min(b.requestedSize, b.size) : b.size;
            auto it = std::lower_bound(tags.begin(), tags.end(), std::make_pair(b.address, MemoryCategory::Parameter));
            if (it != tags.end() && it->first == b.address) {
                out.bytes[static_cast<size_t>(it->second)] += bytes;
                continue;
            }
            const StackRole role = b.stack < roles.size() ? roles[b.stack] : StackRole::Unknown;
            out.bytes[static_cast<size_t>(categoryOfRole(role))] += bytes;
            out.estimated = true;
        }
    return out;
}

CategoryBytes categoriesAt(const DeviceState& state, const std::vector<StackRole>& roles) {
    CategoryBytes out;
    for (const StateSegment& seg : state.segments)
        for (const StateBlock& b : seg.blocks) {
            if (b.kind == StateBlockKind::Free || b.kind == StateBlockKind::PendingFree) continue;
            const StackRole role = b.stack < roles.size() ? roles[b.stack] : StackRole::Unknown;
            const uint64_t bytes = b.requestedSize ? std::min(b.requestedSize, b.size) : b.size;
            out.bytes[static_cast<size_t>(categoryOfRole(role))] += bytes;
        }
    return out;
}

} // namespace memlens::model
