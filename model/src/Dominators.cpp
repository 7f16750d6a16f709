#include "Dominators.h"

#include <utility>

namespace memlens::model {

std::vector<int32_t> dominators(const Dag& g, uint32_t root) {
    const size_t n = g.out.size();
    std::vector<int32_t> post(n, -1), order;
    order.reserve(n);
    std::vector<std::pair<uint32_t, size_t>> stack;
    std::vector<char> seen(n, 0);
    stack.emplace_back(root, 0);
    seen[root] = 1;
    while (!stack.empty()) {
        auto& [v, i] = stack.back();
        if (i < g.out[v].size()) {
            const uint32_t w = g.out[v][i++];
            if (!seen[w]) {
                seen[w] = 1;
                stack.emplace_back(w, 0);
            }
        } else {
            post[v] = static_cast<int32_t>(order.size());
            order.push_back(v);
            stack.pop_back();
        }
    }
    std::vector<int32_t> idom(n, -1);
    idom[root] = static_cast<int32_t>(root);
    auto intersect = [&](int32_t b1, int32_t b2) {
        while (b1 != b2) {
            while (post[b1] < post[b2]) b1 = idom[b1];
            while (post[b2] < post[b1]) b2 = idom[b2];
        }
        return b1;
    };
    bool changed = true;
    while (changed) {
        changed = false;
        for (auto it = order.rbegin(); it != order.rend(); ++it) {
            const uint32_t b = *it;
            if (b == root) continue;
            int32_t nd = -1;
            for (uint32_t p : g.in[b]) {
                if (idom[p] < 0) continue;
                nd = nd < 0 ? static_cast<int32_t>(p) : intersect(static_cast<int32_t>(p), nd);
            }
            if (nd >= 0 && idom[b] != nd) {
                idom[b] = nd;
                changed = true;
            }
        }
    }
    return idom;
}

} // namespace memlens::model
