#include "memlens/model/WorkloadEdits.h"

#include <algorithm>
#include <cmath>

namespace memlens::model {

bool stackMatches(const Snapshot& snapshot, StackId stack, const std::string& needle) {
    if (stack == 0 || stack >= snapshot.stackCount()) return false;
    const FrameId* f = snapshot.stackBegin(stack);
    for (size_t i = 0; i < snapshot.stackSize(stack); ++i) {
        const Frame& fr = snapshot.frames[f[i]];
        if (snapshot.str(fr.name).find(needle) != std::string_view::npos ||
            snapshot.str(fr.filename).find(needle) != std::string_view::npos)
            return true;
    }
    return false;
}

bool isForwardBackwardStack(const Snapshot& snapshot, StackId stack) {
    if (stack == 0 || stack >= snapshot.stackCount()) return false;
    const FrameId* f = snapshot.stackBegin(stack);
    for (size_t i = 0; i < snapshot.stackSize(stack); ++i) {
        const Frame& fr = snapshot.frames[f[i]];
        std::string_view name = snapshot.str(fr.name);
        std::string_view file = snapshot.str(fr.filename);
        if (name == "forward" || name == "_forward" || name == "backward" || name == "_call_impl" ||
            name == "run_backward" || name == "_engine_run_backward" ||
            name.find("autograd::Engine") != std::string_view::npos ||
            file.find("torch/autograd/") != std::string_view::npos)
            return true;
    }
    return false;
}

EditSummary applyEdits(Workload& w, const Snapshot& snapshot, const WorkloadEdits& edits) {
    EditSummary sum;
    if (!edits.any()) return sum;
    std::vector<Iteration> iterations = splitIterations(snapshot, w.device).iterations;
    sum.iterations = iterations.size();

    const size_t nAlloc = w.allocations.size();
    std::vector<bool> dropped(nAlloc, false);
    std::vector<int64_t> earlyFree(nAlloc, -1);  // new free position
    std::vector<uint64_t> newSize(nAlloc, 0);

    for (size_t id = 0; id < nAlloc; ++id) {
        const WorkloadAllocation& a = w.allocations[id];
        if (a.allocEntry < 0 || a.oom) continue;  // before the trace: not the workload's to change
        bool inScope = true;
        if (edits.iteration) {
            int64_t k = iterationOf(iterations, a.allocEntry);
            inScope = k >= 0 && iterations[static_cast<size_t>(k)].number == *edits.iteration;
        }
        if (inScope && edits.dropAbove && a.size > edits.dropAbove) {
            dropped[id] = true;
            ++sum.dropped;
            sum.bytesDropped += a.size;
            continue;
        }
        bool match = std::binary_search(edits.freeStackIds.begin(), edits.freeStackIds.end(), a.stack);
        for (const std::string& s : edits.freeStacks)
            if (stackMatches(snapshot, a.stack, s)) {
                match = true;
                break;
            }
        if (match) {
            ++sum.matched;
            int64_t end;
            if (iterations.empty()) {
                end = w.traceEntries - 1;
            } else {
                int64_t k = iterationOf(iterations, a.allocEntry);
                end = k >= 0 ? iterations[static_cast<size_t>(k)].lastEntry : -1;
            }
            if (end >= 0 && (a.freeEntry < 0 || a.freeEntry > end)) {
                earlyFree[id] = end;
                ++sum.freedEarly;
                sum.bytesFreedEarly += a.size;
            }
        }
        if (inScope && edits.scale != 1.0 && isForwardBackwardStack(snapshot, a.stack)) {
            double v = std::round(static_cast<double>(a.size) * edits.scale);
            newSize[id] = v < 1.0 ? 1 : static_cast<uint64_t>(v);
            ++sum.scaled;
        }
    }
    sum.estimated = edits.scale != 1.0;

    struct Keyed {
        int64_t position;
        int order;  // at the same position: the original op first, then the inserted frees
        WorkloadOp op;
    };
    std::vector<Keyed> out;
    out.reserve(w.ops.size() + sum.freedEarly);
    for (const WorkloadOp& op : w.ops) {
        if (op.kind != WorkloadOp::Kind::EmptyCache && dropped[op.id]) continue;
        if (op.kind == WorkloadOp::Kind::Free && earlyFree[op.id] >= 0) continue;
        out.push_back({op.position, 0, op});
    }
    for (size_t id = 0; id < nAlloc; ++id)  // the size its malloc asks
        if (newSize[id]) w.allocations[id].size = newSize[id];
    for (size_t id = 0; id < nAlloc; ++id) {
        if (earlyFree[id] < 0) continue;
        WorkloadOp o;
        o.kind = WorkloadOp::Kind::Free;
        o.id = static_cast<uint32_t>(id);
        o.position = static_cast<int32_t>(earlyFree[id]);  // an entry of the trace
        out.push_back({o.position, 1, o});
    }
    std::stable_sort(out.begin(), out.end(), [](const Keyed& a, const Keyed& b) {
        return a.position != b.position ? a.position < b.position : a.order < b.order;
    });
    w.ops.clear();
    for (const Keyed& k : out) w.ops.push_back(k.op);
    return sum;
}

} // namespace memlens::model
