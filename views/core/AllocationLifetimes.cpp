#include "core/AllocationLifetimes.h"

#include "memlens/model/AddressMap.h"
#include "memlens/model/HugePages.h"

#include <algorithm>
#include <unordered_set>

namespace memlens::views {

AllocationLifetimes AllocationLifetimes::compute(const model::TraceColumns& trace) {
    AllocationLifetimes out;
    std::vector<AllocationLifetime> before;
    out.pair(trace, 1024, before);
    out.finish(before);
    return out;
}

AllocationLifetimes AllocationLifetimes::compute(const model::DeviceData& device) {
    AllocationLifetimes out;
    std::vector<AllocationLifetime> before;
    size_t active = 0;
    for (const model::Block& b : device.blocks) active += b.state != model::BlockState::Inactive;
    out.pair(device.trace, active + 1024, before);
    const int32_t n = device.trace.rowsAsInt32("the allocation lifetimes");
    std::unordered_set<uint64_t> liveAtEnd;
    for (const AllocationLifetime& l : out.m_all)
        if (l.end >= n) liveAtEnd.insert(l.address);
    for (const AllocationLifetime& l : before)
        if (l.end >= n) liveAtEnd.insert(l.address);
    for (const model::Block& b : device.blocks) {
        if (b.state == model::BlockState::Inactive || liveAtEnd.count(b.address)) continue;
        AllocationLifetime l;
        l.begin = -1;
        l.end = n;
        l.address = b.address;
        l.size = b.requestedSize;
        l.stack = b.stack;
        before.push_back(l);
    }
    out.finish(before);
    return out;
}

void AllocationLifetimes::pair(const model::TraceColumns& trace, size_t reserveBefore,
                               std::vector<AllocationLifetime>& before) {
    using model::Action;
    const int32_t n = trace.rowsAsInt32("the allocation lifetimes");
    const auto allocs = static_cast<size_t>(std::count(trace.action.begin(), trace.action.end(), Action::Alloc));
    auto& all = m_all;
    model::reserveHugePages(all, allocs + reserveBefore);  // exactly what stays, unless many frees have no alloc
    // address -> index into all, or kBefore | index into before
    constexpr size_t kBefore = size_t(1) << 63;
    model::AddressMap<size_t> open;
    for (int32_t i = 0; i < n; ++i) {
        const Action a = trace.action[static_cast<size_t>(i)];
        if (a != Action::Alloc && a != Action::FreeRequested && a != Action::FreeCompleted && a != Action::Free) continue;
        const uint64_t addr = trace.addr[static_cast<size_t>(i)];
        size_t* it = open.find(addr);
        const auto lifetime = [&](size_t ref) -> AllocationLifetime& {
            return (ref & kBefore) ? before[ref & ~kBefore] : all[ref];
        };
        if (a == Action::Alloc) {
            if (it) {  // the free of the previous block here was lost: end it now
                lifetime(*it).end = i;
                open.erase(addr);
            }
            AllocationLifetime l;
            l.begin = i;
            l.end = n;
            l.address = addr;
            l.size = trace.size[static_cast<size_t>(i)];
            l.stack = trace.stack[static_cast<size_t>(i)];
            open[addr] = all.size();
            all.push_back(l);
            continue;
        }
        if (!it) {  // a free without its alloc: allocated before recording
            AllocationLifetime l;
            l.begin = -1;
            l.end = n;
            l.address = addr;
            l.size = trace.size[static_cast<size_t>(i)];
            l.stack = trace.stack[static_cast<size_t>(i)];
            it = &(open[addr] = kBefore | before.size());
            before.push_back(l);
        }
        AllocationLifetime& l = lifetime(*it);
        if (a == Action::FreeRequested) {
            l.freeRequested = i;
        } else {
            l.end = i;
            open.erase(addr);
        }
    }
    // allocations alive at the end keep end == n
}

void AllocationLifetimes::finish(std::vector<AllocationLifetime>& before) {
    // Order by begin: the trace's lifetimes are in the order of their allocs; those from before
    // the recording (begin -1, in the order of their frees, then the final state's) go in front.
    // In place when the reserve holds them (it does unless many frees had no alloc).
    const size_t k = before.size(), m = m_all.size();
    if (k > 0) {
        if (m_all.capacity() < m + k) m_all.reserve(m + k);
        m_all.resize(m + k);
        std::move_backward(m_all.begin(), m_all.begin() + static_cast<std::ptrdiff_t>(m), m_all.end());
        std::copy(before.begin(), before.end(), m_all.begin());
    }
    std::vector<AllocationLifetime>().swap(before);
    // no shrink_to_fit: the reserve beyond the end was never touched, so it costs address space,
    // not memory, where copying the lifetimes would cost them twice for a moment
}

std::vector<uint32_t> AllocationLifetimes::largest(size_t n) const {
    n = std::min(n, m_all.size());
    std::vector<uint32_t> idx;
    model::reserveHugePages(idx, m_all.size());
    idx.resize(m_all.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<uint32_t>(i);
    // larger first; of equal sizes the earlier
    auto before = [this](uint32_t x, uint32_t y) {
        return m_all[x].size != m_all[y].size ? m_all[x].size > m_all[y].size : x < y;
    };
    if (n < idx.size()) std::nth_element(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(n), idx.end(), before);
    idx.resize(n);
    std::sort(idx.begin(), idx.end());
    return idx;
}

std::vector<uint32_t> AllocationLifetimes::mostVisible(size_t n, const EntryAxis& axis, double x0, double x1,
                                                       double maxCover) const {
    std::vector<std::pair<double, uint32_t>> area;  // (visible bytes x span, index)
    model::reserveHugePages(area, m_all.size());
    const int64_t count = axis.count();
    const double start = axis.startX(), endX = axis.endX();
    for (size_t i = 0; i < m_all.size(); ++i) {
        const AllocationLifetime& l = m_all[i];
        const double b = l.begin < 0 ? start : axis.x(std::min<int64_t>(l.begin, count - 1));
        const double e = l.end >= count ? endX : axis.x(std::max<int64_t>(l.end, 0));
        const double span = std::min(e, x1) - std::max(b, x0);
        if (span > 0 && l.size > 0) area.emplace_back(span * static_cast<double>(l.size), static_cast<uint32_t>(i));
    }
    n = std::min(n, area.size());
    auto before = [](const std::pair<double, uint32_t>& x, const std::pair<double, uint32_t>& y) {
        return x.first != y.first ? x.first > y.first : x.second < y.second;
    };
    if (n < area.size()) std::nth_element(area.begin(), area.begin() + static_cast<std::ptrdiff_t>(n), area.end(), before);
    area.resize(n);
    std::sort(area.begin(), area.end(), before);  // most area first, for the cover bound
    const double range = x1 - x0;
    double cover = 0;
    std::vector<uint32_t> out;
    out.reserve(n);
    for (const auto& [a, i] : area) {
        const double f = range > 0 ? a / static_cast<double>(m_all[i].size) / range : 1.0;
        if (!out.empty() && cover + f > maxCover) break;
        cover += f;
        out.push_back(i);
    }
    std::sort(out.begin(), out.end());
    return out;
}

size_t AllocationLifetimes::memoryBytes() const { return m_all.capacity() * sizeof(AllocationLifetime); }

} // namespace memlens::views
