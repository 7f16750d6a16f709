#!/usr/bin/env python3
"""Load and rewind benchmarks of memlens against Python's pickle, on one large generated snapshot.

    tests/bench/bench.py [--build-dir build] [--entries 1000000] [--repeat 3]

1. Generates (once; cached in BUILD_DIR/bench-data/) a realistic snapshot with
   make_large_snapshot.py.
2. Times Python's C-accelerated pickle.load on it in a subprocess (/usr/bin/python3 by default)
   and reads that subprocess's peak RSS.
3. Runs memlens-bench-load (readSnapshotFile in a forked child; time and peak RSS).
4. Runs memlens-bench-rewind (StateHistory for device 0: build time and memory; stateAfter at
   1000 random entries: mean, p50, p99, max).
4b. Runs memlens-bench-replay (the allocator simulator replays device 0 with the snapshot's
   settings: trace entries per second, goal >= 5 M; its time against the load's; and whether it
   reproduces the recording).
5. Prints a table with speed-up = pickle time / memlens time (goal >= 10) and memory ratio =
   memlens peak RSS / file size (goal <= 1), pickle's ratio alongside.

--smoke runs everything on a small snapshot (for ctest bench.smoke) and ignores the goals.
--enforce-goals exits 1 when a goal is missed.
"""
import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

PICKLE_CHILD = r'''
import pickle, resource, sys, time
t = time.perf_counter()
with open(sys.argv[1], 'rb') as f:
    obj = pickle.load(f)
t = time.perf_counter() - t
print(f'RESULT load_s={t:.6f} peak_rss_kb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}')
'''


def result_fields(text):
    m = [line for line in text.splitlines() if line.startswith('RESULT ')]
    if not m:
        raise RuntimeError('no RESULT line in:\n' + text)
    return {k: float(v) for k, v in re.findall(r'(\w+)=([-0-9.eE+]+)', m[-1])}


def run(cmd, timeout):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f'{" ".join(cmd)} failed with exit code {p.returncode}:\n{p.stdout}')
    return p.stdout


def find_bin(build_dir, name, given):
    if given:
        return given
    for cand in (os.path.join(build_dir, 'tests', 'bench', name), os.path.join(build_dir, name)):
        if os.access(cand, os.X_OK):
            return cand
    return None


def ensure_snapshot(python, data_dir, entries, seed):
    os.makedirs(data_dir, exist_ok=True)
    path = os.path.join(data_dir, f'large-{entries}-s{seed}.pickle')
    gen = os.path.join(HERE, 'make_large_snapshot.py')
    if os.path.exists(path) and os.path.getmtime(path) >= os.path.getmtime(gen):
        print(f'using cached {path}')
        return path
    print(f'generating {path} ({entries} entries) ...', flush=True)
    t = time.perf_counter()
    subprocess.run([python, gen, path, '--entries', str(entries), '--seed', str(seed)], check=True)
    print(f'  generated in {time.perf_counter() - t:.1f} s')
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--build-dir', default='build')
    ap.add_argument('--entries', type=int, default=1_000_000)
    ap.add_argument('--seed', type=int, default=20240601)
    ap.add_argument('--repeat', type=int, default=3, help='runs of each load; the best time is kept')
    ap.add_argument('--queries', type=int, default=1000, help='random stateAfter calls')
    ap.add_argument('--python', default='/usr/bin/python3' if os.path.exists('/usr/bin/python3') else sys.executable,
                    help='interpreter whose pickle.load is measured (and that runs the generator)')
    ap.add_argument('--file', help='benchmark this snapshot instead of a generated one')
    ap.add_argument('--load-bin')
    ap.add_argument('--rewind-bin')
    ap.add_argument('--replay-bin')
    ap.add_argument('--smoke', action='store_true', help='small snapshot, one run, goals not checked')
    ap.add_argument('--enforce-goals', action='store_true')
    args = ap.parse_args()
    if args.smoke:
        args.entries, args.repeat, args.queries = 20000, 1, 200

    build_dir = os.path.abspath(args.build_dir)
    load_bin = find_bin(build_dir, 'memlens-bench-load', args.load_bin)
    rewind_bin = find_bin(build_dir, 'memlens-bench-rewind', args.rewind_bin)
    replay_bin = find_bin(build_dir, 'memlens-bench-replay', args.replay_bin)
    if not load_bin:
        sys.exit(f'memlens-bench-load not found under {build_dir}; build it first '
                 f'(cmake --build {args.build_dir} --target memlens-bench-load)')

    data_dir = os.path.join(build_dir, 'bench-data' + ('-smoke' if args.smoke else ''))
    path = args.file or ensure_snapshot(args.python, data_dir, args.entries, args.seed)
    size = os.path.getsize(path)
    mb = size / 1e6

    # Python's pickle, best of `repeat` runs
    py_times, py_rss = [], 0
    for _ in range(args.repeat):
        r = result_fields(run([args.python, '-c', PICKLE_CHILD, path], timeout=3600))
        py_times.append(r['load_s'])
        py_rss = max(py_rss, r['peak_rss_kb'])
    py_t = min(py_times)
    print(f'pickle.load ({args.python}): best {py_t:.3f} s of {args.repeat}, peak RSS {py_rss / 1024:.1f} MB')

    out = run([load_bin, path, '--repeat', str(args.repeat)], timeout=3600)
    print(out, end='')
    ml = result_fields(out)

    rw = None
    if rewind_bin:
        out = run([rewind_bin, path, '--queries', str(args.queries)], timeout=3600)
        print(out, end='')
        rw = result_fields(out)
    else:
        print('memlens-bench-rewind not built; rewind benchmark skipped')

    rp = None
    if replay_bin:
        out = run([replay_bin, path, '--repeat', str(args.repeat)], timeout=3600)
        print(out, end='')
        rp = result_fields(out)
    else:
        print('memlens-bench-replay not built; replay benchmark skipped')

    speedup = py_t / ml['load_s']
    ratio = ml['peak_rss_kb'] * 1024 / size
    py_ratio = py_rss * 1024 / size
    ok_speed, ok_mem = speedup >= 10, ratio <= 1

    def verdict(ok):
        return '(smoke run: not checked)' if args.smoke else ('ok' if ok else 'MISSED')
    w = 44
    print()
    print(f'snapshot: {path}')
    print(f'  {mb:.1f} MB, {int(ml["entries"]):,} trace entries, {int(ml["segments"])} segments, '
          f'{int(ml["blocks"])} blocks, {int(ml["frames"])} frames, {int(ml["stacks"])} stacks')
    print(f'{"":{w}} {"time (s)":>10} {"peak RSS (MB)":>14} {"RSS / file":>11}')
    print(f'{"Python pickle.load (C)":{w}} {py_t:10.3f} {py_rss / 1024:14.1f} {py_ratio:11.2f}')
    print(f'{"memlens readSnapshotFile":{w}} {ml["load_s"]:10.3f} {ml["peak_rss_kb"] / 1024:14.1f} {ratio:11.2f}')
    print(f'{"speed-up (pickle time / memlens time)":{w}} {speedup:10.2f}x  goal >= 10   '
          f'{verdict(ok_speed)}')
    print(f'{"memory ratio (memlens peak RSS / file)":{w}} {ratio:10.2f}    goal <= 1    {verdict(ok_mem)}')
    print(f'{"pickle peak RSS / file (comparison)":{w}} {py_ratio:10.2f}')
    ok_rewind = True
    if rw:
        ok_rewind = rw['max_ms'] < 10
        print(f'{"StateHistory build (device 0)":{w}} {rw["build_s"]:10.3f} s, '
              f'{rw["history_bytes"] / 1e6:.1f} MB (memoryBytes), RSS +{rw["build_rss_kb"] / 1024:.1f} MB, '
              f'{int(rw["checkpoints"])} checkpoints')
        print(f'{"stateAfter, %d random entries (ms)" % int(rw["queries"]):{w}} mean {rw["mean_ms"]:.3f}  '
              f'p50 {rw["p50_ms"]:.3f}  p99 {rw["p99_ms"]:.3f}  max {rw["max_ms"]:.3f}   goal max < 10   '
              f'{verdict(ok_rewind)}')
    ok_replay = True
    if rp:
        ok_replay = rp['entries_per_s'] >= 5e6
        print(f'{"replay (simulator, device 0)":{w}} {rp["replay_s"]:10.3f} s, '
              f'{rp["entries_per_s"] / 1e6:.2f} M entries/s   goal >= 5 M   {verdict(ok_replay)}')
        print(f'{"replay, CPU time":{w}} {rp["replay_cpu_s"]:10.3f} s, '
              f'{rp["entries_per_cpu_s"] / 1e6:.2f} M entries/s of CPU time')
        print(f'{"replay time / load time (same run)":{w}} {rp["replay_to_load"]:10.3f}    '
              f'(load {rp["load_s"]:.3f} s, replay input {rp["workload_s"]:.3f} s); '
              f'{"reproduces the recording" if rp["exact"] else "DIFFERS from the recording"}')
        if args.smoke and not rp['exact']:
            return 1
    if args.smoke:
        return 0
    if args.enforce_goals and not (ok_speed and ok_mem and ok_rewind and ok_replay):
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
