#pragma once
// The command line of a benchmark run as `NAME FILE [--repeat N]` (memlens-bench-doctor,
// memlens-bench-skim).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

struct FileRepeatArgs {
    std::string path;
    int repeat = 3;  // at least 1
};

// Reads argv into args; returns -1 to go on, else the exit code to end with: 0 after --help, 2
// after a usage error (the usage printed either way).
inline int parseFileRepeat(int argc, char** argv, FileRepeatArgs& args) {
    auto usage = [&](int code) {
        std::fprintf(code ? stderr : stdout, "usage: %s FILE [--repeat N]\n", argv[0]);
        return code;
    };
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--repeat" && i + 1 < argc) args.repeat = std::max(1, std::atoi(argv[++i]));
        else if (a == "-h" || a == "--help") return usage(0);
        else if (args.path.empty() && a[0] != '-') args.path = a;
        else return usage(2);
    }
    return args.path.empty() ? usage(2) : -1;
}
