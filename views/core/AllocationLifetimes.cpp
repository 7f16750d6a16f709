#include "core/AllocationLifetimes.h"

#include "memlens/model/AddressMap.h"

#include <algorithm>
#include <unordered_set>

namespace memlens::views {

AllocationLifetimes AllocationLifetimes::compute(const model::TraceColumns& trace) {
    AllocationLifetimes out;
    std::vector<AllocationLifetime> before;
    Aside openAtEnd;
    out.pair(trace, 1024, before, openAtEnd);
    Aside addresses;  // of the lifetimes from before the recording still live at the end
    for (const auto& [address, where] : openAtEnd)
        if (where & kBefore) addresses.emplace_back(where, address);
    out.finish(before, addresses);
    return out;
}

AllocationLifetimes AllocationLifetimes::compute(const model::DeviceData& device) {
    AllocationLifetimes out;
    std::vector<AllocationLifetime> before;
    size_t active = 0;
    for (const model::Block& b : device.blocks) active += b.state != model::BlockState::Inactive;
    Aside openAtEnd;
    out.pair(device.trace, active + 1024, before, openAtEnd);
    const int32_t n = device.trace.rowsAsInt32("the allocation lifetimes");
    std::unordered_set<uint64_t> liveAtEnd;
    Aside addresses;
    for (const auto& [address, where] : openAtEnd) {
        liveAtEnd.insert(address);
        if (where & kBefore) addresses.emplace_back(where, address);
    }
    for (const model::Block& b : device.blocks) {
        if (b.state == model::BlockState::Inactive || liveAtEnd.count(b.address)) continue;
        AllocationLifetime l;
        l.begin = -1;
        l.end = n;
        addresses.emplace_back(kBefore | before.size(), b.address);
        before.push_back(l);
        out.m_before.push_back({b.requestedSize, b.stack});
    }
    out.finish(before, addresses);
    return out;
}

void AllocationLifetimes::pair(const model::TraceColumns& trace, size_t reserveBefore,
                               std::vector<AllocationLifetime>& before, Aside& openAtEnd) {
    m_trace = &trace;
    using model::Action;
    const int32_t n = trace.rowsAsInt32("the allocation lifetimes");
    const auto allocs = static_cast<size_t>(std::count(trace.action.begin(), trace.action.end(), Action::Alloc));
    auto& all = m_all;
    all.reserve(allocs + reserveBefore);  // exactly what stays, unless many frees have no alloc
    // address -> index into all, or kBefore | index into before
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
            open[addr] = all.size();
            all.push_back(l);
            continue;
        }
        if (!it) {  // a free without its alloc: allocated before recording
            AllocationLifetime l;
            l.begin = -1;
            l.end = n;
            it = &(open[addr] = kBefore | before.size());
            before.push_back(l);
            m_before.push_back({trace.size[static_cast<size_t>(i)], trace.stack[static_cast<size_t>(i)]});
        }
        if (a != Action::FreeRequested) {
            lifetime(*it).end = i;
            open.erase(addr);
        }
    }
    // allocations alive at the end keep end == n
    openAtEnd.reserve(open.size());
    open.forEach([&openAtEnd](uint64_t address, size_t where) { openAtEnd.emplace_back(address, where); });
}

void AllocationLifetimes::finish(std::vector<AllocationLifetime>& before, Aside& addresses) {
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
    const auto byIndex = [k](const Aside& from) {
        std::vector<std::pair<uint32_t, uint64_t>> to;
        to.reserve(from.size());
        for (const auto& [where, value] : from)
            to.emplace_back(static_cast<uint32_t>((where & kBefore) ? where & ~kBefore : where + k), value);
        std::sort(to.begin(), to.end());
        return to;
    };
    m_before.shrink_to_fit();
    m_addresses = byIndex(addresses);
}

uint64_t AllocationLifetimes::aside(const std::vector<std::pair<uint32_t, uint64_t>>& v, size_t i) {
    auto it = std::lower_bound(v.begin(), v.end(), std::pair<uint32_t, uint64_t>(static_cast<uint32_t>(i), 0));
    return it != v.end() && it->first == i ? it->second : 0;
}

uint64_t AllocationLifetimes::address(size_t i, const model::TraceColumns& trace) const {
    const AllocationLifetime& l = m_all[i];
    if (l.begin >= 0) return trace.addr[static_cast<size_t>(l.begin)];
    if (static_cast<size_t>(l.end) < trace.rows()) return trace.addr[static_cast<size_t>(l.end)];
    return aside(m_addresses, i);
}

std::vector<uint32_t> AllocationLifetimes::largest(size_t n) const {
    n = std::min(n, m_all.size());
    std::vector<uint32_t> idx;
    idx.reserve(m_all.size());
    idx.resize(m_all.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<uint32_t>(i);
    // larger first; of equal sizes the earlier
    auto before = [this](uint32_t x, uint32_t y) {
        const uint64_t bx = bytes(x), by = bytes(y);
        return bx != by ? bx > by : x < y;
    };
    if (n < idx.size()) std::nth_element(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(n), idx.end(), before);
    idx.resize(n);
    std::sort(idx.begin(), idx.end());
    return idx;
}

std::vector<uint32_t> AllocationLifetimes::mostVisible(size_t n, const EntryAxis& axis, double x0, double x1,
                                                       double maxCover) const {
    // The n best so far (visible bytes x span, index) as a heap with the worst on top: the
    // lifetimes come in index order, so one that only ties the worst is never better. Most are
    // turned away by one comparison; n entries instead of one per lifetime (23 MB for 1.4 million).
    std::vector<std::pair<double, uint32_t>> area;
    if (n == 0) return {};
    area.reserve(std::min(n, m_all.size()));
    auto before = [](const std::pair<double, uint32_t>& x, const std::pair<double, uint32_t>& y) {
        return x.first != y.first ? x.first > y.first : x.second < y.second;
    };
    const int64_t count = axis.count();
    const double start = axis.startX(), endX = axis.endX();
    for (size_t i = 0; i < m_all.size(); ++i) {
        const AllocationLifetime& l = m_all[i];
        const double b = l.begin < 0 ? start : axis.x(std::min<int64_t>(l.begin, count - 1));
        const double e = l.end >= count ? endX : axis.x(std::max<int64_t>(l.end, 0));
        const double span = std::min(e, x1) - std::max(b, x0);
        if (span <= 0) continue;
        const uint64_t size = bytes(i);
        if (size == 0) continue;
        const double a = span * static_cast<double>(size);
        if (area.size() < n) {
            area.emplace_back(a, static_cast<uint32_t>(i));
            std::push_heap(area.begin(), area.end(), before);
        } else if (a > area.front().first) {
            std::pop_heap(area.begin(), area.end(), before);
            area.back() = {a, static_cast<uint32_t>(i)};
            std::push_heap(area.begin(), area.end(), before);
        }
    }
    std::sort(area.begin(), area.end(), before);  // most area first, for the cover bound
    n = area.size();
    const double range = x1 - x0;
    double cover = 0;
    std::vector<uint32_t> out;
    out.reserve(n);
    for (const auto& [a, i] : area) {
        const double f = range > 0 ? a / static_cast<double>(bytes(i)) / range : 1.0;
        if (!out.empty() && cover + f > maxCover) break;
        cover += f;
        out.push_back(i);
    }
    std::sort(out.begin(), out.end());
    return out;
}

size_t AllocationLifetimes::memoryBytes() const {
    return m_all.capacity() * sizeof(AllocationLifetime) + m_before.capacity() * sizeof(Before) +
           m_addresses.capacity() * sizeof(m_addresses[0]);
}

} // namespace memlens::views
