#!/usr/bin/env python3
"""Time and memory of `memlens-cli stats FILE` against Python's pickle.load, by file size.

    tests/bench/bench_scale.py [--cli build/app/memlens-cli] [--sizes-gb 0.15 0.6 2 4]
                               [--data-dir /tmp/bench] [--repeat 2] [--pickle-max-gb 18]
                               [--rounds 1] [--file F ...]

For each size, a snapshot of the generated shape (make_large_snapshot.py --size-mb; cached in
DATA_DIR as scale-<MB>MB-s<seed>.pickle, regenerated when the generator is newer) or each --file
given, then, one after the other in the same run:
  * memlens-cli stats FILE > /dev/null, best wall time of --repeat runs, peak RSS from
    /usr/bin/time -f %M (the largest of the runs);
  * pickle.load(f) in a fresh /usr/bin/python3 (C unpickler), once: wall time of the load and the
    child's ru_maxrss. Skipped when its peak RSS, estimated from the smallest file's RSS/file
    ratio (or 8x the file before any), would exceed --pickle-max-gb; the table then says so.
With --rounds N (N > 1), the two alternate N times for each file (memlens' best of --repeat,
then pickle.load), so that a host whose speed drifts over minutes slows both alike: the table
gives the least time of each and their ratio, and the ratios of the N rounds (each round's pair
measured within seconds of each other): their median and range.
Prints a Markdown table: size, entries, memlens time, memlens peak RSS, RSS/file, pickle time,
pickle RSS, speed-up (pickle time / memlens time).
"""
import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PYTHON = '/usr/bin/python3' if os.path.exists('/usr/bin/python3') else sys.executable

PICKLE_CHILD = r'''
import pickle, resource, sys, time
t = time.perf_counter()
with open(sys.argv[1], 'rb') as f:
    obj = pickle.load(f)
t = time.perf_counter() - t
tr = obj.get('device_traces', []) if isinstance(obj, dict) else []
print(f'RESULT load_s={t:.6f} peak_rss_kb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} '
      f'entries={sum(len(x) for x in tr)}')
'''


def ensure_file(data_dir, size_gb, seed):
    mb = int(round(size_gb * 1000))
    path = os.path.join(data_dir, f'scale-{mb}MB-s{seed}.pickle')
    gen = os.path.join(HERE, 'make_large_snapshot.py')
    if os.path.exists(path) and os.path.getmtime(path) >= os.path.getmtime(gen):
        print(f'using cached {path}', file=sys.stderr)
        return path, None
    print(f'generating {path} ...', file=sys.stderr, flush=True)
    t = time.perf_counter()
    subprocess.run([PYTHON, gen, path, '--size-mb', str(mb), '--seed', str(seed)], check=True)
    return path, time.perf_counter() - t


def run_memlens(cli, path, repeat):
    best, rss, entries = None, 0, None
    for _ in range(repeat):
        p = subprocess.run(['/usr/bin/time', '-f', 'TIME %e %M', cli, 'stats', path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise RuntimeError(f'memlens-cli stats {path} failed ({p.returncode}):\n{p.stderr}')
        m = re.findall(r'TIME ([0-9.]+) ([0-9]+)', p.stderr)
        t, kb = float(m[-1][0]), int(m[-1][1])
        best = t if best is None else min(best, t)
        rss = max(rss, kb)
        e = re.search(r'([0-9][0-9,]*) (?:trace )?entries', p.stdout)
        if e:
            entries = int(e.group(1).replace(',', ''))
    return best, rss, entries


def run_pickle(path):
    p = subprocess.run([PYTHON, '-c', PICKLE_CHILD, path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        raise RuntimeError(f'pickle.load {path} failed ({p.returncode}):\n{p.stdout}')
    r = dict(re.findall(r'(\w+)=([-0-9.eE+]+)', [x for x in p.stdout.splitlines() if x.startswith('RESULT')][-1]))
    return float(r['load_s']), int(r['peak_rss_kb']), int(r['entries'])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--cli', default=os.path.join(REPO, 'build', 'app', 'memlens-cli'))
    ap.add_argument('--sizes-gb', type=float, nargs='*', default=[0.15, 0.6, 2, 4])
    ap.add_argument('--file', nargs='*', default=[], help='also (or, with --sizes-gb and nothing, only) these files')
    ap.add_argument('--data-dir', default='/tmp/bench')
    ap.add_argument('--seed', type=int, default=20240601)
    ap.add_argument('--repeat', type=int, default=2, help='memlens runs per file; the best time is kept')
    ap.add_argument('--pickle-max-gb', type=float, default=18.0,
                    help='skip pickle.load where its peak RSS would exceed this')
    ap.add_argument('--no-pickle', action='store_true')
    ap.add_argument('--rounds', type=int, default=1,
                    help='alternate memlens and pickle.load this many times per file (see above)')
    args = ap.parse_args()
    if not os.access(args.cli, os.X_OK):
        sys.exit(f'{args.cli} is not an executable memlens-cli')
    os.makedirs(args.data_dir, exist_ok=True)

    # generate everything first, so that no generation runs beside a measurement
    files = []
    for gb in args.sizes_gb:
        path, gen_s = ensure_file(args.data_dir, gb, args.seed)
        files.append((path, gen_s))
    files += [(f, None) for f in args.file]

    rows = []
    ratio = None  # pickle peak RSS / file size, from the first file pickle loaded
    for path, gen_s in files:
        size = os.path.getsize(path)
        ml_t, ml_kb, entries = run_memlens(args.cli, path, args.repeat)
        py = None
        rounds = []  # (memlens, pickle) of each round
        est = (ratio or 8.0) * size
        if args.no_pickle:
            note = 'not run'
        elif est > args.pickle_max_gb * 1e9:
            note = f'skipped: would need about {est / 1e9:.0f} GB'
        else:
            py = run_pickle(path)
            rounds.append((ml_t, py[0]))
            for _ in range(args.rounds - 1):
                t, kb, _ = run_memlens(args.cli, path, args.repeat)
                again = run_pickle(path)
                rounds.append((t, again[0]))
                ml_kb = max(ml_kb, kb)
                py = (min(py[0], again[0]), max(py[1], again[1]), py[2])
            ml_t = min(r[0] for r in rounds)
            entries = entries or py[2]
            if ratio is None:
                ratio = py[1] * 1024 / size
            note = ''
        rows.append((path, size, entries, ml_t, ml_kb, py, note, gen_s, rounds))
        print(f'{os.path.basename(path)}: memlens {ml_t:.2f} s {ml_kb / 1024:.0f} MB; '
              + (f'pickle {py[0]:.2f} s {py[1] / 1024:.0f} MB' if py else note), file=sys.stderr, flush=True)

    by_round = args.rounds > 1
    print('| file | size | entries | memlens stats | memlens peak RSS | RSS / file | pickle.load | pickle peak RSS '
          '| speed-up |' + (' speed-up by round: median (range) |' if by_round else ''))
    print('|---|---|---|---|---|---|---|---|---|' + ('---|' if by_round else ''))
    for path, size, entries, ml_t, ml_kb, py, note, gen_s, rounds in rows:
        e = f'{entries:,}' if entries else '?'
        cells = [os.path.basename(path), f'{size / 1e9:.2f} GB', e, f'{ml_t:.2f} s', f'{ml_kb / 1024:.0f} MB',
                 f'{ml_kb * 1024 / size:.2f}']
        if py:
            cells += [f'{py[0]:.1f} s', f'{py[1] / 1024 / 1024:.2f} GB', f'{py[0] / ml_t:.1f}x']
        else:
            cells += [note, '-', '-']
        if by_round:
            r = sorted(p / m for m, p in rounds)
            cells += [f'{r[len(r) // 2]:.1f}x ({r[0]:.1f}–{r[-1]:.1f}x)' if r else '-']
        print('| ' + ' | '.join(cells) + ' |')
    return 0


if __name__ == '__main__':
    sys.exit(main())
