#include "memlens/model/AllocationSites.h"

#include "memlens/model/FrameClassification.h"
#include "memlens/model/ParseError.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace memlens::model {

size_t SiteTree::depthOf(uint32_t node) const {
    size_t d = 0;
    while (node != 0) {
        node = nodes[node].parent;
        ++d;
    }
    return d;
}

namespace {

void checkCancel(const std::atomic<bool>* cancel) {
    if (cancel && cancel->load(std::memory_order_relaxed)) throw Cancelled();
}

struct TmpNode {
    FrameId frame;
    uint32_t parent;
    uint64_t bytes = 0, count = 0, liveBytes = 0, liveCount = 0;
    StackId topStack = 0;
    uint64_t topBytes = 0;
    bool hasTop = false;
};

// Grows a tree of paths, then lays it out with each node's children contiguous and sorted.
class TreeBuilder {
public:
    TreeBuilder() { nodes_.push_back(TmpNode{kNoFrame, 0}); }

    void add(std::span<const FrameId> path, const StackCost& c) {
        add(0, c);
        uint32_t node = 0;
        for (FrameId f : path) {
            uint64_t key = (static_cast<uint64_t>(node) << 32) | f;
            auto [it, inserted] = index_.try_emplace(key, static_cast<uint32_t>(nodes_.size()));
            if (inserted) nodes_.push_back(TmpNode{f, node});
            node = it->second;
            add(node, c);
        }
    }

    SiteTree finish() {
        const size_t n = nodes_.size();
        // children of each node, CSR
        std::vector<uint32_t> start(n + 1, 0), kids(n > 0 ? n - 1 : 0);
        for (size_t i = 1; i < n; ++i) ++start[nodes_[i].parent + 1];
        std::partial_sum(start.begin(), start.end(), start.begin());
        std::vector<uint32_t> fill(start.begin(), start.end() - 1);
        for (size_t i = 1; i < n; ++i) kids[fill[nodes_[i].parent]++] = static_cast<uint32_t>(i);
        // breadth first, children by bytes descending (then frame id, for a stable order)
        SiteTree t;
        t.nodes.resize(n);
        std::vector<uint32_t> order;  // old index at each new index
        order.reserve(n);
        order.push_back(0);
        for (size_t pos = 0; pos < order.size(); ++pos) {
            uint32_t old = order[pos];
            auto b = kids.begin() + start[old], e = kids.begin() + start[old + 1];
            std::sort(b, e, [&](uint32_t x, uint32_t y) {
                if (nodes_[x].bytes != nodes_[y].bytes) return nodes_[x].bytes > nodes_[y].bytes;
                return nodes_[x].frame < nodes_[y].frame;
            });
            SiteNode& out = t.nodes[pos];
            const TmpNode& in = nodes_[old];
            out.frame = in.frame;
            out.bytes = in.bytes;
            out.count = in.count;
            out.liveBytes = in.liveBytes;
            out.liveCount = in.liveCount;
            out.topStack = in.topStack;
            out.firstChild = static_cast<uint32_t>(order.size());
            out.childCount = static_cast<uint32_t>(e - b);
            for (auto it = b; it != e; ++it) {
                t.nodes[order.size()].parent = static_cast<uint32_t>(pos);
                order.push_back(*it);
            }
        }
        return t;
    }

private:
    void add(uint32_t node, const StackCost& c) {
        TmpNode& n = nodes_[node];
        n.bytes += c.bytes;
        n.count += c.count;
        n.liveBytes += c.liveBytes;
        n.liveCount += c.liveCount;
        if (!n.hasTop || c.bytes > n.topBytes) {
            n.hasTop = true;
            n.topBytes = c.bytes;
            n.topStack = c.stack;
        }
    }

    std::vector<TmpNode> nodes_;
    std::unordered_map<uint64_t, uint32_t> index_;
};

} // namespace

std::vector<StackCost> stackCostsAt(const DeviceState& st) {
    std::unordered_map<StackId, StackCost> by;
    for (const StateSegment& seg : st.segments)
        for (const StateBlock& b : seg.blocks) {
            if (b.kind != StateBlockKind::Allocated && b.kind != StateBlockKind::BeforeRecording) continue;
            uint64_t bytes = b.requestedSize == 0 ? b.size : std::min(b.requestedSize, b.size);
            StackCost& c = by[b.stack];
            c.stack = b.stack;
            c.bytes += bytes;
            c.count += 1;
            c.liveBytes += bytes;
            c.liveCount += 1;
        }
    std::vector<StackCost> out;
    out.reserve(by.size());
    for (const auto& [s, c] : by) out.push_back(c);
    std::sort(out.begin(), out.end(), [](const StackCost& a, const StackCost& b) { return a.stack < b.stack; });
    return out;
}

std::vector<StackCost> stackCostsInRange(const TraceColumns& t, int64_t first, int64_t last,
                                         const std::atomic<bool>* cancel) {
    first = std::max<int64_t>(first, 0);
    last = std::min<int64_t>(last, static_cast<int64_t>(t.rows()) - 1);
    std::unordered_map<StackId, StackCost> by;
    struct Open {
        StackId stack;
        uint64_t size;
    };
    std::unordered_map<uint64_t, Open> open;  // address -> alloc still live
    for (int64_t i = first; i <= last; ++i) {
        if ((i & 0xffff) == 0) checkCancel(cancel);
        switch (t.action[i]) {
        case Action::Alloc: {
            StackCost& c = by[t.stack[i]];
            c.stack = t.stack[i];
            c.bytes += t.size[i];
            c.count += 1;
            open[t.addr[i]] = Open{t.stack[i], t.size[i]};
            break;
        }
        case Action::FreeRequested:
        case Action::Free: open.erase(t.addr[i]); break;
        default: break;
        }
    }
    for (const auto& [addr, o] : open) {
        StackCost& c = by[o.stack];
        c.liveBytes += o.size;
        c.liveCount += 1;
    }
    std::vector<StackCost> out;
    out.reserve(by.size());
    for (const auto& [s, c] : by) out.push_back(c);
    std::sort(out.begin(), out.end(), [](const StackCost& a, const StackCost& b) { return a.stack < b.stack; });
    return out;
}

AllocationSites buildAllocationSites(const Snapshot& s, std::span<const StackCost> costs, const SitesOptions& opt) {
    std::vector<uint8_t> native, machinery;  // per frame, only when native frames are left out
    if (opt.skipNative) {
        native.resize(s.frames.size());
        machinery.resize(s.frames.size());
        for (FrameId f = 0; f < s.frames.size(); ++f) {
            native[f] = classifyFrame(s, f).kind == FrameKind::Native;
            machinery[f] = native[f] && isRecordingMachinery(s.str(s.frames[f].name));
        }
    }
    AllocationSites out;
    TreeBuilder up, down;
    std::vector<FrameId> path;
    const FrameId noStack[] = {kNoFrame};
    size_t done = 0;
    for (const StackCost& c : costs) {
        if ((++done & 0x3ff) == 0) checkCancel(opt.cancel);
        out.totalBytes += c.bytes;
        out.totalCount += c.count;
        out.liveBytes += c.liveBytes;
        out.liveCount += c.liveCount;
        ++out.distinctStacks;
        path.clear();
        if (c.stack != 0 && c.stack < s.stackCount()) {
            const FrameId* f = s.stackBegin(c.stack);
            const size_t n = s.stackSize(c.stack);
            if (opt.skipNative)
                for (size_t i = 0; i < n; ++i)
                    if (!native[f[i]]) path.push_back(f[i]);
            if (path.empty()) {
                size_t skip = 0;
                if (opt.skipNative)
                    while (skip + 1 < n && machinery[f[skip]]) ++skip;
                path.assign(f + skip, f + n);
            }
        }
        if (path.empty()) {
            up.add(noStack, c);
            down.add(noStack, c);
            continue;
        }
        up.add(path, c);  // innermost frame first
        std::reverse(path.begin(), path.end());
        down.add(path, c);
    }
    out.bottomUp = up.finish();
    checkCancel(opt.cancel);
    out.topDown = down.finish();
    return out;
}

AllocationSites allocationSitesAt(const Snapshot& s, const DeviceState& state, const SitesOptions& opt) {
    auto costs = stackCostsAt(state);
    return buildAllocationSites(s, costs, opt);
}

AllocationSites allocationSitesInRange(const Snapshot& s, const DeviceData& device, int64_t first, int64_t last,
                                       const SitesOptions& opt) {
    auto costs = stackCostsInRange(device.trace, first, last, opt.cancel);
    return buildAllocationSites(s, costs, opt);
}

} // namespace memlens::model
