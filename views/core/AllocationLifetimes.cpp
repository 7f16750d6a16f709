#include "core/AllocationLifetimes.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace memlens::views {

AllocationLifetimes AllocationLifetimes::compute(const model::TraceColumns& trace) {
    AllocationLifetimes out;
    out.pair(trace);
    out.finish();
    return out;
}

AllocationLifetimes AllocationLifetimes::compute(const model::DeviceData& device) {
    AllocationLifetimes out;
    out.pair(device.trace);
    const auto n = static_cast<int64_t>(device.trace.rows());
    std::unordered_set<uint64_t> liveAtEnd;
    for (const AllocationLifetime& l : out.m_all)
        if (l.end >= n) liveAtEnd.insert(l.address);
    for (const model::Block& b : device.blocks) {
        if (b.state == model::BlockState::Inactive || liveAtEnd.count(b.address)) continue;
        AllocationLifetime l;
        l.begin = -1;
        l.end = n;
        l.address = b.address;
        l.size = b.requestedSize;
        l.stack = b.stack;
        out.m_all.push_back(l);
    }
    out.finish();
    return out;
}

void AllocationLifetimes::pair(const model::TraceColumns& trace) {
    using model::Action;
    auto& all = m_all;
    const int64_t n = static_cast<int64_t>(trace.rows());
    std::unordered_map<uint64_t, size_t> open;  // address -> index into all
    open.reserve(1024);
    for (int64_t i = 0; i < n; ++i) {
        const Action a = trace.action[static_cast<size_t>(i)];
        if (a != Action::Alloc && a != Action::FreeRequested && a != Action::FreeCompleted && a != Action::Free) continue;
        const uint64_t addr = trace.addr[static_cast<size_t>(i)];
        auto it = open.find(addr);
        if (a == Action::Alloc) {
            if (it != open.end()) {  // the free of the previous block here was lost: end it now
                all[it->second].end = i;
                open.erase(it);
            }
            AllocationLifetime l;
            l.begin = i;
            l.end = n;
            l.address = addr;
            l.size = trace.size[static_cast<size_t>(i)];
            l.stack = trace.stack[static_cast<size_t>(i)];
            open.emplace(addr, all.size());
            all.push_back(l);
            continue;
        }
        if (it == open.end()) {  // a free without its alloc: allocated before recording
            AllocationLifetime l;
            l.begin = -1;
            l.end = n;
            l.address = addr;
            l.size = trace.size[static_cast<size_t>(i)];
            l.stack = trace.stack[static_cast<size_t>(i)];
            it = open.emplace(addr, all.size()).first;
            all.push_back(l);
        }
        AllocationLifetime& l = all[it->second];
        if (a == Action::FreeRequested) {
            l.freeRequested = i;
        } else {
            l.end = i;
            open.erase(it);
        }
    }
    // allocations alive at the end keep end == n
}

void AllocationLifetimes::finish() {
    auto& all = m_all;
    // order by begin (stable keeps the rest in order)
    std::stable_sort(all.begin(), all.end(),
                     [](const AllocationLifetime& x, const AllocationLifetime& y) { return x.begin < y.begin; });
    m_bySize.resize(all.size());
    for (size_t i = 0; i < all.size(); ++i) m_bySize[i] = static_cast<uint32_t>(i);
    std::stable_sort(m_bySize.begin(), m_bySize.end(), [&all](uint32_t x, uint32_t y) { return all[x].size > all[y].size; });
}

std::vector<uint32_t> AllocationLifetimes::largest(size_t n) const {
    n = std::min(n, m_bySize.size());
    std::vector<uint32_t> out(m_bySize.begin(), m_bySize.begin() + static_cast<std::ptrdiff_t>(n));
    std::sort(out.begin(), out.end());
    return out;
}

size_t AllocationLifetimes::memoryBytes() const {
    return m_all.capacity() * sizeof(AllocationLifetime) + m_bySize.capacity() * sizeof(uint32_t);
}

} // namespace memlens::views
