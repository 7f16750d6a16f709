// memlens-cli: PyTorch CUDA memory snapshots on the command line.
#include "CliArgs.h"
#include "Commands.h"

#include "memlens/model/ParseError.h"

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace {

const char* kUsage =
    "usage: memlens-cli COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  stats FILE [--json]                      per-device figures of the snapshot's final state\n"
    "  timeline FILE --device D [--csv]         live and reserved bytes after each trace entry\n"
    "  state FILE --device D --at INDEX [--json]\n"
    "                                           segments and blocks right after entry INDEX\n"
    "                                           (-1: before the first entry)\n"
    "\n"
    "Errors print one line on stderr and exit 1; usage errors exit 2.\n";

} // namespace

int main(int argc, char** argv) {
    std::ios::sync_with_stdio(false);
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        std::cout << kUsage;
        return args.empty() ? 2 : 0;
    }
    std::string command = args[0];
    args.erase(args.begin());
    std::string file;
    try {
        for (const auto& a : args)
            if (a.rfind("--", 0) != 0) {
                file = a;
                break;
            }
        if (command == "stats") return memlens::cli::statsCommand(args);
        if (command == "timeline") return memlens::cli::timelineCommand(args);
        if (command == "state") return memlens::cli::stateCommand(args);
        throw memlens::cli::UsageError("unknown command '" + command + "'");
    } catch (const memlens::cli::UsageError& e) {
        std::cerr << "memlens-cli: " << e.what() << "\n" << kUsage;
        return 2;
    } catch (const memlens::model::ParseError& e) {
        std::cout.flush();
        std::cerr << e.describe(file) << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << file << ": " << e.what() << "\n";
        return 1;
    }
}
