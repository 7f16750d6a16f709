#include "memlens/model/ParseError.h"
#include "memlens/model/SnapshotReader.h"
#include <chrono>
#include <iostream>
using namespace memlens::model;
int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        try {
            Snapshot s = readSnapshotFile(argv[i]);
            auto t1 = std::chrono::steady_clock::now();
            std::cout << argv[i] << ": devices " << s.devices.size() << " frames " << s.frames.size() << " stacks "
                      << s.stackCount() << " warnings " << s.warnings.size() << " ms "
                      << std::chrono::duration<double, std::milli>(t1 - t0).count() << "\n";
            for (auto& d : s.devices)
                std::cout << "  dev " << d.device << " segs " << d.segments.size() << " blocks " << d.blocks.size()
                          << " trace " << d.trace.rows() << "\n";
            for (auto& w : s.warnings) std::cout << "  W " << w << "\n";
        } catch (const ParseError& e) {
            std::cout << e.describe(argv[i]) << "\n";
        }
    }
}
