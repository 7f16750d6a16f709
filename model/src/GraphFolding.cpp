#include "memlens/model/GraphFolding.h"

#include "Dominators.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

// Folding one graph, in stages:
//   1. parameterSubtrees: which nodes only lead to parameters;
//   2. foldParameters: the graph shown without them, each node with the parameters it uses;
//   3. findRepeatedBlocks: runs of identical blocks between the dominators of the graph's end;
//   4. foldNodes and foldRepeats: one folded node per shown node that is not a later copy;
//   5. foldEdges: the edges between folded nodes, merged, without the ways from copy to copy.

namespace memlens::model {

namespace {

// Nodes that only view, reshape or copy what they get (a weight's transpose, its half copy under
// autocast): they fold with the parameter they lead to.
bool viewLike(const std::string& name) {
    static const char* const kViews[] = {
        "TBackward", "ViewBackward", "ReshapeAliasBackward", "UnsafeViewBackward", "ExpandBackward", "PermuteBackward",
        "TransposeBackward", "ToCopyBackward", "_ToCopyBackward", "SqueezeBackward", "UnsqueezeBackward", "SliceBackward",
        "SelectBackward", "CloneBackward", "AliasBackward", "AsStridedBackward", "NarrowBackward", "ViewAsRealBackward",
        "ViewAsComplexBackward", "ConjBackward", "DetachBackward"};
    for (const char* v : kViews)
        if (name.rfind(v, 0) == 0) return true;
    return false;
}

// The graph's edges, without edges to themselves or out of range.
Dag graphEdges(const RetainedGraph& graph) {
    const size_t n = graph.nodesList.size();
    Dag full(n);
    for (const auto& [a, b] : graph.edges) {
        if (a >= n || b >= n || a == b) continue;
        full.add(a, b);
    }
    return full;
}

// 1. Parameter subtrees: parameter AccumulateGrad nodes, and nodes that save nothing of their own
// and lead only to such nodes (TBackward0, ViewBackward0, ToCopyBackward0 ... of a weight).
// Computed whether or not they are folded: the search for repeated blocks ignores them.
std::vector<char> parameterSubtrees(const RetainedGraph& graph, const Dag& full) {
    const auto& nodes = graph.nodesList;
    const size_t n = nodes.size();
    std::vector<char> paramOnly(n, 0);
    std::vector<char> state(n, 0);  // 0 new, 1 on stack, 2 done
    for (uint32_t s = 0; s < n; ++s) {
        if (state[s]) continue;
        std::vector<std::pair<uint32_t, size_t>> stack{{s, 0}};
        state[s] = 1;
        while (!stack.empty()) {
            auto& [v, i] = stack.back();
            if (i < full.out[v].size()) {
                const uint32_t w = full.out[v][i++];
                if (!state[w]) {
                    state[w] = 1;
                    stack.emplace_back(w, 0);
                }
                continue;
            }
            const auto& nd = nodes[v];
            bool p = false;
            if (nd.isAccumulateGrad()) {
                p = nd.param;
            } else if (v != 0 && !full.out[v].empty()) {
                // a view or copy of a weight, or a node whose saved tensors are all parameters
                p = viewLike(nd.name) ||
                    (graph.savedListed && !nd.saved.empty() &&
                     std::all_of(nd.saved.begin(), nd.saved.end(), [](const SavedTensorInfo& t) { return t.param; }));
                for (uint32_t w : full.out[v]) p = p && state[w] == 2 && paramOnly[w];
            }
            paramOnly[v] = p;
            state[v] = 2;
            stack.pop_back();
        }
    }
    paramOnly[0] = 0;
    return paramOnly;
}

// The graph shown: the original one without the parameter subtrees when they fold.
struct ShownGraph {
    std::vector<int32_t> keep;   // original index -> shown index, -1: folded away
    std::vector<uint32_t> kept;  // shown index -> original index
    Dag g;                       // over shown indices
    // per shown node: the parameters it uses (original AccumulateGrad indices)
    std::vector<std::vector<uint32_t>> params;
    size_t size() const { return kept.size(); }
};

// 2. Parameters folded into their users: the parameter subtrees leave the graph shown, and each
// node that leads into one counts the AccumulateGrad nodes it reaches through it.
ShownGraph foldParameters(const RetainedGraph& graph, const Dag& full, const std::vector<char>& paramOnly,
                          const GraphFoldOptions& options) {
    const auto& nodes = graph.nodesList;
    const auto n = static_cast<uint32_t>(nodes.size());
    ShownGraph shown;
    shown.keep.assign(n, -1);
    for (uint32_t v = 0; v < n; ++v)
        if (!options.parameters || !paramOnly[v]) {
            shown.keep[v] = static_cast<int32_t>(shown.kept.size());
            shown.kept.push_back(v);
        }
    const size_t k = shown.kept.size();
    shown.g = Dag(k);
    for (uint32_t v : shown.kept)
        for (uint32_t w : full.out[v])
            if (shown.keep[w] >= 0)
                shown.g.add(static_cast<uint32_t>(shown.keep[v]), static_cast<uint32_t>(shown.keep[w]));
    shown.params.resize(k);
    if (!options.parameters) return shown;
    for (uint32_t v : shown.kept) {
        std::set<uint32_t> found, visited;
        std::vector<uint32_t> todo;
        for (uint32_t w : full.out[v])
            if (paramOnly[w]) todo.push_back(w);
        while (!todo.empty()) {
            const uint32_t w = todo.back();
            todo.pop_back();
            if (!visited.insert(w).second) continue;
            if (nodes[w].isAccumulateGrad()) found.insert(w);
            for (uint32_t x : full.out[w]) todo.push_back(x);
        }
        shown.params[shown.keep[v]].assign(found.begin(), found.end());
    }
    return shown;
}

// Runs of identical consecutive blocks among the shown nodes.
struct Repeats {
    struct Run {
        int count = 0;
        int nodesPerBlock = 0;
        std::vector<uint32_t> firstCopy;  // shown indices
    };
    std::vector<int32_t> copyOf;      // shown index -> shown index of its first copy, -1: none
    std::vector<int32_t> copyNumber;  // which copy it belongs to
    std::vector<int32_t> runOf;       // which run, -1: none
    std::vector<char> copyStart;      // the first node of a copy (where the copy before leads)
    std::vector<Run> runs;

    explicit Repeats(size_t k) : copyOf(k, -1), copyNumber(k, 0), runOf(k, -1), copyStart(k, 0) {}
};

// The segments of the graph between consecutive dominators of its end, each in BFS order from its
// dominator.
struct Segments {
    std::vector<std::vector<uint32_t>> members;  // shown indices
    std::vector<int32_t> pos;                    // shown index -> its place in its segment
};

// Which segment each shown node belongs to (-1: none): the dominators of every sink (a virtual
// sink after every dead end) form a chain from the root; a node belongs to the segment of the
// nearest chain node that dominates it. Dominators are taken over the graph without parameter
// subtrees (their AccumulateGrad nodes would be dead ends all over the graph); shown parameter
// subtrees belong to the segment of the node that uses them. Fills chain with the chain nodes.
std::vector<int32_t> segmentOf(const ShownGraph& shown, const std::vector<char>& paramOnly,
                               std::vector<uint32_t>& chain) {
    const size_t k = shown.size();
    const auto& g = shown.g;
    auto core = [&](uint32_t v) { return !paramOnly[shown.kept[v]]; };
    Dag h(k + 1);
    const auto sink = static_cast<uint32_t>(k);
    for (uint32_t v = 0; v < k; ++v) {
        if (!core(v)) continue;
        for (uint32_t w : g.out[v])
            if (core(w)) h.add(v, w);
        if (h.out[v].empty()) h.add(v, sink);
    }
    const std::vector<int32_t> idom = dominators(h, 0);
    std::vector<int32_t> seg(k, -1);
    if (idom[sink] < 0) return seg;
    for (int32_t d = idom[sink];; d = idom[d]) {
        chain.push_back(static_cast<uint32_t>(d));
        if (d == 0) break;
    }
    std::reverse(chain.begin(), chain.end());
    std::vector<int32_t> chainPos(k + 1, -1);
    for (size_t i = 0; i < chain.size(); ++i) chainPos[chain[i]] = static_cast<int32_t>(i);
    for (uint32_t v = 0; v < k; ++v) {
        if (!core(v) || idom[v] < 0) continue;
        int32_t x = static_cast<int32_t>(v);
        while (chainPos[x] < 0 && x != idom[x]) x = idom[x];
        seg[v] = chainPos[x];
    }
    for (uint32_t v = 0; v < k; ++v) {
        if (!core(v) || seg[v] < 0) continue;
        std::vector<uint32_t> todo{v};
        while (!todo.empty()) {
            const uint32_t x = todo.back();
            todo.pop_back();
            for (uint32_t w : g.out[x])
                if (!core(w) && seg[w] < 0) {
                    seg[w] = seg[v];
                    todo.push_back(w);
                }
        }
    }
    return seg;
}

// Each segment's nodes in BFS order from its chain node.
Segments segmentMembers(const ShownGraph& shown, const std::vector<uint32_t>& chain, const std::vector<int32_t>& seg) {
    Segments out;
    out.members.resize(chain.size());
    out.pos.assign(shown.size(), -1);
    for (size_t i = 0; i < chain.size(); ++i) {
        auto& order = out.members[i];
        order.push_back(chain[i]);
        out.pos[chain[i]] = 0;
        for (size_t q = 0; q < order.size(); ++q)
            for (uint32_t w : shown.g.out[order[q]])
                if (seg[w] == static_cast<int32_t>(i) && out.pos[w] < 0) {
                    out.pos[w] = static_cast<int32_t>(order.size());
                    order.push_back(w);
                }
    }
    return out;
}

// A segment's shape as a string: its nodes' names, parameter counts and edges inside the segment
// (only those: the last block of a run leads elsewhere). Equal shapes are identical blocks.
std::string segmentShape(const std::vector<GraphNodeInfo>& nodes, const ShownGraph& shown, const Segments& segments,
                         const std::vector<int32_t>& seg, size_t i) {
    std::string s;
    for (uint32_t v : segments.members[i]) {
        s += nodes[shown.kept[v]].name;
        s += '#';
        s += std::to_string(shown.params[v].size());
        s += '(';
        for (uint32_t w : shown.g.out[v])
            if (seg[w] == static_cast<int32_t>(i)) {
                s += std::to_string(segments.pos[w]);
                s += ',';
            }
        s += ')';
    }
    return s;
}

// Runs of identical consecutive blocks of p segments (p up to maxPeriod), the longest cover first
// from each segment on, into `repeats`.
void findRuns(const Segments& segments, const std::vector<std::string>& shape, const GraphFoldOptions& options,
              Repeats& repeats) {
    const size_t m = shape.size();
    size_t i = 0;
    while (i < m) {
        size_t bestP = 0, bestR = 0;
        for (size_t p = 1; p <= static_cast<size_t>(std::max(1, options.maxPeriod)) && i + 2 * p <= m; ++p) {
            size_t r = 1;
            while (i + (r + 1) * p <= m) {
                bool same = true;
                for (size_t q = 0; q < p && same; ++q) same = shape[i + r * p + q] == shape[i + q];
                if (!same) break;
                ++r;
            }
            if (r >= static_cast<size_t>(std::max(2, options.minRepeats)) && r * p > bestR * bestP) {
                bestP = p;
                bestR = r;
            }
        }
        if (!bestP) {
            ++i;
            continue;
        }
        Repeats::Run run;
        run.count = static_cast<int>(bestR);
        run.nodesPerBlock = 0;
        const int id = static_cast<int>(repeats.runs.size());
        for (size_t c = 0; c < bestR; ++c)
            for (size_t q = 0; q < bestP; ++q) {
                const auto& first = segments.members[i + q];
                const auto& mine = segments.members[i + c * bestP + q];
                for (size_t t = 0; t < mine.size(); ++t) {
                    repeats.copyOf[mine[t]] = static_cast<int32_t>(first[t]);
                    repeats.copyNumber[mine[t]] = static_cast<int32_t>(c);
                    repeats.runOf[mine[t]] = id;
                    repeats.copyStart[mine[t]] = q == 0 && t == 0;
                    if (c == 0) {
                        run.firstCopy.push_back(first[t]);
                        ++run.nodesPerBlock;
                    }
                }
            }
        repeats.runs.push_back(std::move(run));
        i += bestP * bestR;
    }
}

// 3. Identical blocks folded into one with a count: segments between the dominators of every
// sink, compared by shape.
Repeats findRepeatedBlocks(const std::vector<GraphNodeInfo>& nodes, const ShownGraph& shown,
                           const std::vector<char>& paramOnly, const GraphFoldOptions& options) {
    Repeats repeats(shown.size());
    if (!options.repeats || shown.size() < 4) return repeats;
    std::vector<uint32_t> chain;
    const std::vector<int32_t> seg = segmentOf(shown, paramOnly, chain);
    if (chain.empty()) return repeats;
    const Segments segments = segmentMembers(shown, chain, seg);
    std::vector<std::string> shape(chain.size());
    for (size_t i = 0; i < chain.size(); ++i) shape[i] = segmentShape(nodes, shown, segments, seg, i);
    findRuns(segments, shape, options, repeats);
    return repeats;
}

// 4. The folded nodes: shown nodes that are not later copies, each with what its copies and
// parameters add up to. Returns shown index -> folded index (-1 for later copies).
std::vector<int32_t> foldNodes(const RetainedGraph& graph, const Dag& full, const std::vector<char>& paramOnly,
                               const ShownGraph& shown, const Repeats& repeats, FoldedGraph& out) {
    const auto& nodes = graph.nodesList;
    const size_t n = nodes.size();
    const size_t k = shown.size();
    std::vector<int32_t> folded(k, -1);
    for (uint32_t v = 0; v < k; ++v) {
        if (repeats.copyOf[v] >= 0 && repeats.copyOf[v] != static_cast<int32_t>(v)) continue;
        folded[v] = static_cast<int32_t>(out.nodes.size());
        FoldedNode f;
        f.representative = shown.kept[v];
        f.name = nodes[shown.kept[v]].shortName();
        f.repeat = repeats.runOf[v];
        for (uint32_t p : shown.params[v]) f.parameterNodes.push_back(p);
        out.nodes.push_back(std::move(f));
    }
    for (uint32_t v = 0; v < k; ++v) {
        const uint32_t rep = repeats.copyOf[v] >= 0 ? static_cast<uint32_t>(repeats.copyOf[v]) : v;
        const int32_t fi = folded[rep];
        FoldedNode& f = out.nodes[fi];
        const auto& nd = nodes[shown.kept[v]];
        f.members.push_back(shown.kept[v]);
        f.copies = static_cast<int>(f.members.size());
        f.savedBytes += nd.savedBytes();
        f.savedAlive += nd.savedCount(SavedState::Alive);
        f.savedReleased += nd.savedCount(SavedState::Released);
        f.savedHooked += nd.savedCount(SavedState::Hooked);
        f.parameters += static_cast<int>(shown.params[v].size());
        for (uint32_t p : shown.params[v]) {
            const auto& var = nodes[p].variable;
            if (var) f.parameterBytes += var->bytes;
        }
        out.nodeOf[shown.kept[v]] = fi;
        for (uint32_t p : shown.params[v])
            if (out.nodeOf[p] < 0) out.nodeOf[p] = fi;
    }
    // param-only nodes not reached above (views of a parameter): the node of whoever uses them
    for (uint32_t v = 0; v < n; ++v) {
        if (out.nodeOf[v] >= 0 || !paramOnly[v]) continue;
        for (uint32_t u : full.in[v])
            if (out.nodeOf[u] >= 0) {
                out.nodeOf[v] = out.nodeOf[u];
                break;
            }
    }
    return folded;
}

// The runs as the folded graph shows them: the folded nodes of their first copy, and a label.
void foldRepeats(const Repeats& repeats, const std::vector<int32_t>& folded, FoldedGraph& out) {
    for (const Repeats::Run& r : repeats.runs) {
        FoldedRepeat rep;
        rep.count = r.count;
        rep.nodesPerBlock = r.nodesPerBlock;
        for (uint32_t v : r.firstCopy) rep.nodes.push_back(static_cast<uint32_t>(folded[v]));
        rep.label = "\u00d7 " + std::to_string(r.count) + " identical blocks of " + std::to_string(r.nodesPerBlock) +
                    (r.nodesPerBlock == 1 ? " node" : " nodes");
        out.repeats.push_back(std::move(rep));
    }
}

// 5. The edges between folded nodes, in the order first met, equal ones merged with a count.
void foldEdges(const ShownGraph& shown, const Repeats& repeats, FoldedGraph& out) {
    std::map<std::pair<uint32_t, uint32_t>, int> edges;
    std::vector<std::pair<uint32_t, uint32_t>> order;
    for (uint32_t v = 0; v < shown.size(); ++v)
        for (uint32_t w : shown.g.out[v]) {
            // the way from one copy into the next is the way into the copy shown: dropped
            if (repeats.runOf[v] >= 0 && repeats.runOf[v] == repeats.runOf[w] &&
                repeats.copyNumber[v] != repeats.copyNumber[w] && repeats.copyStart[w])
                continue;
            const auto a = static_cast<uint32_t>(out.nodeOf[shown.kept[v]]);
            const auto b = static_cast<uint32_t>(out.nodeOf[shown.kept[w]]);
            if (a == b) continue;
            auto [it, fresh] = edges.emplace(std::make_pair(a, b), 0);
            if (fresh) order.emplace_back(a, b);
            ++it->second;
        }
    for (const auto& e : order) out.edges.push_back({e.first, e.second, edges[e]});
}

} // namespace

FoldedGraph foldGraph(const RetainedGraph& graph, const GraphFoldOptions& options) {
    FoldedGraph out;
    const size_t n = graph.nodesList.size();
    out.originalNodes = n;
    out.originalEdges = graph.edges.size();
    out.nodeOf.assign(n, -1);
    if (n == 0) return out;

    const Dag full = graphEdges(graph);
    const std::vector<char> paramOnly = parameterSubtrees(graph, full);
    const ShownGraph shown = foldParameters(graph, full, paramOnly, options);
    for (uint32_t v = 0; v < n; ++v)
        if (options.parameters && paramOnly[v] && graph.nodesList[v].isAccumulateGrad()) ++out.foldedParameters;
    const Repeats repeats = findRepeatedBlocks(graph.nodesList, shown, paramOnly, options);
    const std::vector<int32_t> folded = foldNodes(graph, full, paramOnly, shown, repeats, out);
    foldRepeats(repeats, folded, out);
    foldEdges(shown, repeats, out);
    return out;
}

} // namespace memlens::model
