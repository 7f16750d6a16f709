#pragma once
// Test helper: the real snapshots beside the checkout (MEMLENS_SNAPSHOTS_DIR), sorted; empty if absent.
#include <algorithm>
#include <filesystem>
#include <vector>

inline std::vector<std::filesystem::path> realSnapshots() {
    std::vector<std::filesystem::path> out;
    std::filesystem::path dir(MEMLENS_SNAPSHOTS_DIR);
    if (!std::filesystem::is_directory(dir)) return out;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().extension() == ".pickle" || e.path().extension() == ".pkl") out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}
