#pragma once
// Internal to graph folding: a directed graph as adjacency lists, and its dominator tree.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memlens::model {

struct Dag {
    std::vector<std::vector<uint32_t>> out, in;

    explicit Dag(size_t nodes = 0) : out(nodes), in(nodes) {}
    void add(uint32_t from, uint32_t to) {
        out[from].push_back(to);
        in[to].push_back(from);
    }
    size_t size() const { return out.size(); }
};

// Immediate dominators from `root` (Cooper, Harvey, Kennedy); -1 for unreachable nodes, root for
// the root itself.
std::vector<int32_t> dominators(const Dag& g, uint32_t root);

} // namespace memlens::model
