// memlens-dump-stacks FILE: the frames of every trace entry and every block of the final state as
// memlens reads them, one JSON line each: {"d": DEVICE, "i": INDEX, "f": [[FILENAME, LINE or null,
// NAME], ...]} for entries, {"d": DEVICE, "b": INDEX, "f": [...]} for blocks (segments in address
// order, their blocks as listed). For
// tests/model/test_stacks.py, which compares them with what Python's pickle reads. LINE is null
// where memlens keeps no line (absent, or 2^64-1). Exit 1 with the reader's message on bad input.
#include "memlens/model/ParseError.h"
#include "memlens/model/Snapshot.h"
#include "memlens/model/SnapshotReader.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

using namespace memlens::model;

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: memlens-dump-stacks FILE\n");
        return 2;
    }
    try {
        const Snapshot snap = readSnapshotFile(argv[1], {});
        auto framesOf = [&](StackId s) {
            nlohmann::json frames = nlohmann::json::array();
            const FrameId* f = snap.stackBegin(s);
            for (size_t k = 0; k < snap.stackSize(s); ++k) {
                const Frame& fr = snap.frames[f[k]];
                frames.push_back({std::string(snap.str(fr.filename)),
                                  fr.lineKnown ? nlohmann::json(fr.line) : nlohmann::json(nullptr),
                                  std::string(snap.str(fr.name))});
            }
            return frames;
        };
        auto print = [](const nlohmann::json& line) {
            std::cout << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
        };
        for (const DeviceData& d : snap.devices) {
            for (size_t i = 0; i < d.trace.rows(); ++i) print({{"d", d.device}, {"i", i}, {"f", framesOf(d.trace.stack[i])}});
            for (size_t b = 0; b < d.blocks.size(); ++b) print({{"d", d.device}, {"b", b}, {"f", framesOf(d.blocks[b].stack)}});
        }
    } catch (const ParseError& e) {
        std::fprintf(stderr, "%s\n", e.describe(argv[1]).c_str());
        return 1;
    }
    return 0;
}
