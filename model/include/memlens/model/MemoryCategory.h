#pragma once
// What a piece of memory is for: parameter, gradient, optimizer state, saved for backward, input
// batch, or other. Exact in sessions (the agent tags storages by address); in a plain snapshot
// estimated from the allocation stack (the role of the code that allocated it).
#include "memlens/model/AllocatorState.h"
#include "memlens/model/Snapshot.h"

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace memlens::model {

enum class MemoryCategory : uint8_t { Parameter, Gradient, OptimizerState, SavedForBackward, Input, Other };
constexpr int kMemoryCategoryCount = static_cast<int>(MemoryCategory::Other) + 1;
const char* memoryCategoryName(MemoryCategory c);   // "parameter", "gradient", "optimizer_state", ...
const char* memoryCategoryLabel(MemoryCategory c);  // "Parameters", "Gradients", ...

// The part of a training step a stack's frames belong to (the first match in this order).
enum class StackRole : uint8_t {
    Unknown,
    Optimizer,    // a frame in torch/optim/
    ModuleSetup,  // Module.to/cuda/_apply, nn.Parameter, a module's __init__/reset_parameters
    DataLoading,  // torch/utils/data/, pin_memory
    Backward,     // Tensor.backward, torch.autograd.backward/grad, the autograd engine (C++ frames)
    Forward,      // a forward() or Module.__call__
};
const char* stackRoleName(StackRole r);

// One role per stack of the snapshot (index = StackId).
std::vector<StackRole> stackRoles(const Snapshot& snapshot);

// The estimate for a live block allocated under a stack of that role.
MemoryCategory categoryOfRole(StackRole role);

struct CategoryBytes {
    std::array<uint64_t, kMemoryCategoryCount> bytes{};
    bool estimated = true;
    uint64_t operator[](MemoryCategory c) const { return bytes[static_cast<size_t>(c)]; }
};
// Requested bytes of the live blocks of a state, by estimated category.
CategoryBytes categoriesAt(const DeviceState& state, const std::vector<StackRole>& roles);

// The agent's tags of a session snapshot: its info's "categories" ({"parameter": [[data_ptr,
// bytes], ...], "gradient": ..., "optimizer_state": ..., "input": ...}), sorted by address.
// Empty when the info has none (or is not JSON).
using CategoryTags = std::vector<std::pair<uint64_t, MemoryCategory>>;
CategoryTags categoryTags(const std::string& infoJson);
// The same with the tags: a live block whose address the agent tagged is of that category
// (exact); the others are estimated from their stacks (estimated is true when there are any).
CategoryBytes categoriesAt(const DeviceState& state, const std::vector<StackRole>& roles, const CategoryTags& tags);

} // namespace memlens::model
