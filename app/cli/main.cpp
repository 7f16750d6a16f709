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
    "       memlens-cli --version\n"
    "\n"
    "commands:\n"
    "  stats FILE [--json]                      per-device figures of the snapshot's final state\n"
    "  timeline FILE --device D [--csv]         live and reserved bytes after each trace entry\n"
    "  state FILE --device D --at INDEX [--json]\n"
    "                                           segments and blocks right after entry INDEX\n"
    "                                           (-1: before the first entry)\n"
    "  slice FILE --device D --from A --to B -o OUT.pickle\n"
    "                                           a smaller snapshot PyTorch's memory_viz opens: the state\n"
    "                                           after entry B, the trace entries A..B, their annotations\n"
    "  replay FILE --device D [--csv|--json]     the trace replayed through a model of the caching\n"
    "                                           allocator with the snapshot's settings: the simulated\n"
    "                                           events (csv), or how far they match the recording (json)\n"
    "  whatif FILE --device D [--json] [--set KEY=VALUE ...] [--capacity BYTES|--fraction F]\n"
    "         [--fix FINDING | --free-stack FRAME ...] [--drop-above BYTES] [--scale F] [--iteration N]\n"
    "                                           the recording against a simulation with other allocator\n"
    "                                           settings (PYTORCH_CUDA_ALLOC_CONF keys), another device, or\n"
    "                                           an edited workload: allocations under FRAME freed at the\n"
    "                                           end of their iteration, those above BYTES dropped,\n"
    "                                           forward/backward allocations scaled by F (estimated);\n"
    "                                           --iteration: drop / scale in iteration N only; --fix: a\n"
    "                                           finding of `check` (its number or rule) fixed\n"
    "  record [-o FILE] [OPTIONS] -- COMMAND...  run COMMAND and record its GPU memory into a session\n"
    "      --snapshot-every N                   allocator snapshot at every N-th iteration\n"
    "      --snapshot-iterations LIST           ... at these iterations (1-based), e.g. 1,5,10-20\n"
    "      --snapshot-period SEC                ... at the first iteration end after each SEC seconds\n"
    "      --max-entries N                      allocator history kept (default 100000)\n"
    "      --stacks python|all|none             stack frames recorded (default: python;\n"
    "                                           C++ programs: all)\n"
    "      --stack-depth N                      keep the innermost N frames of each stack in the\n"
    "                                           snapshots (default: all; Python jobs only)\n"
    "      --manual-steps                       only memlens_agent.mark_step() ends iterations\n"
    "      --agent-config JSON                  more agent settings, e.g. '{\"graph_scans\": false}'\n"
    "      --no-exit-snapshot, --no-oom-snapshot, --sample-interval MS (NVML, default 500), --quiet\n"
    "                                           exits with COMMAND's status (128+N: killed by signal N)\n"
    "  attach PID -o FILE [OPTIONS] [--duration SEC]\n"
    "                                           record a running Python/PyTorch job started without\n"
    "                                           memlens, from now on (record's OPTIONS; iterations count\n"
    "                                           from the attach); Ctrl-C, SIGTERM or --duration detach and\n"
    "                                           leave the job running; needs gdb below Python 3.14\n"
    "  session FILE [--json] [--check] [--follow]\n"
    "                                           process, iterations and snapshots of a session\n"
    "  export FILE --snapshot ID|last [-o OUT.pickle]\n"
    "                                           a snapshot of a session, as PyTorch wrote it\n"
    "  graphs FILE [--json [--detail]]          retained autograd graphs found by the job's agent\n"
    "  check FILE [--json] [--fail-on info|warning|error] [--device D]\n"
    "                                           the doctor: the memory mistakes the snapshot or session\n"
    "                                           shows, what each costs, its evidence and the fix; exits 3\n"
    "                                           when a finding is at or above --fail-on (default warning)\n"
    "  diff FILE --from N --to M [--json] [--device D]\n"
    "                                           allocations made in iterations N..M still alive at the end\n"
    "                                           of M, by allocation stack\n"
    "  diff A B [--json] [--device D]           live memory of B against A, by allocation stack\n"
    "\n"
    "D: a device index, or host for the pinned host memory of torch 2.14 snapshots (stats, timeline, state).\n"
    "FILE: a snapshot pickle (gzip, zstd or xz compressed, or memory_viz's JSON form, too) or a session.\n"
    "Errors print one line on stderr and exit 1; usage errors exit 2.\n";

} // namespace

int main(int argc, char** argv) {
    std::ios::sync_with_stdio(false);
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        std::cout << kUsage;
        return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version") {
        std::cout << "memlens-cli " << MEMLENS_VERSION_STRING << "\n";
        return 0;
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
        if (command == "slice") return memlens::cli::sliceCommand(args);
        if (command == "record") return memlens::cli::recordCommand(args);
        if (command == "attach") return memlens::cli::attachCommand(args);
        if (command == "session") return memlens::cli::sessionCommand(args);
        if (command == "export") return memlens::cli::exportCommand(args);
        if (command == "graphs") return memlens::cli::graphsCommand(args);
        if (command == "replay") return memlens::cli::replayCommand(args);
        if (command == "whatif") return memlens::cli::whatifCommand(args);
        if (command == "check") return memlens::cli::checkCommand(args);
        if (command == "diff") return memlens::cli::diffCommand(args);
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
