#!/usr/bin/env python3
"""memlens-cli on compressed snapshots and on memory_viz's JSON form, against the independent oracle
(tests/tools/snapshot_oracle.py).

Each real snapshot in --snapshots and the bundled example is compressed here with Python's own gzip
and lzma modules (and with the `zstd` command when it is on PATH; said when it is not), written
with its extension (.gz, .xz, .zst) and without one; and written as JSON by Python's json module
(the form memory_viz also opens: tuples become lists), plain and gzipped. `memlens-cli stats FILE --json` must give
exactly what the oracle computes from the uncompressed pickle read by Python's pickle module.
A gzip file cut in half and an xz file with damaged bytes end in the error contract: exit 1, one
stderr line naming the file.

  test_compressed.py --cli build/app/memlens-cli --snapshots ../shared/snapshots --source-dir .
"""
import argparse
import gzip
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile

import test_support
from test_support import Report, json_diff, one_line_error, run

import snapshot_oracle as oracle


def compressed_forms(raw, zstd_cmd, work, stem, data=None):
    """(label, path) of each compressed form of raw, and of data as JSON."""
    out = []
    if data is not None:
        try:
            text = json.dumps(data).encode()
        except (TypeError, ValueError):
            text = None  # not JSON-able (bytes, non-string keys): memory_viz could not read it either
        if text is not None:
            for name, payload in ((stem + ".json", text), (stem + ".json.gz", gzip.compress(text, compresslevel=1))):
                path = os.path.join(work, name)
                with open(path, "wb") as f:
                    f.write(payload)
                out.append((name, path))
    for ext, data in ((".gz", gzip.compress(raw, compresslevel=6)), (".xz", lzma.compress(raw, preset=1))):
        for name in (stem + ext, stem + ext.replace(".", "-") + "-noext"):
            path = os.path.join(work, name)
            with open(path, "wb") as f:
                f.write(data)
            out.append((name, path))
    if zstd_cmd:
        plain = os.path.join(work, stem + ".pickle")
        with open(plain, "wb") as f:
            f.write(raw)
        path = os.path.join(work, stem + ".zst")
        subprocess.run([zstd_cmd, "-q", "-f", "-3", plain, "-o", path], check=True)
        os.remove(plain)
        out.append((stem + ".zst", path))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--snapshots", required=True)
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    report = Report()
    zstd_cmd = shutil.which("zstd")
    if not zstd_cmd:
        print("note: no `zstd` command on PATH: .zst files are left to the model tests (Compressed.*)")
    files = [os.path.join(args.source_dir, "resources", "example.pickle")]
    if os.path.isdir(args.snapshots):
        files += sorted(os.path.join(args.snapshots, n) for n in os.listdir(args.snapshots)
                        if n.endswith((".pickle", ".pkl")))
    else:
        print(f"note: no real snapshots at {args.snapshots}: the bundled example only")
    with tempfile.TemporaryDirectory(prefix="memlens-compressed-") as work:
        # the torch-2.14-shaped fixture too: pools as tuples (lists in JSON), the pinned host memory
        files.append(test_support.write_newer_fixture(args.source_dir, os.path.join(work, "newer.pickle")))
        for i, path in enumerate(files):
            with open(path, "rb") as f:
                raw = f.read()
            data = oracle.load(path)
            expected = oracle.stats(data, newer=True)
            for label, cpath in compressed_forms(raw, zstd_cmd, work, f"s{i}", data):
                r = run([args.cli, "stats", cpath, "--json"])
                what = f"{os.path.basename(path)} as {label}: stats --json"
                if not report.check(r.rc == 0, f"{what}: exit {r.describe()}, stderr {test_support.short(r.err_text)!r}"):
                    continue
                diffs = json_diff(expected, json.loads(r.out))
                report.check(not diffs, f"{what}: differs from the oracle: " + "; ".join(diffs))
                os.remove(cpath)
        # truncated and damaged files: the error contract
        raw = open(files[0], "rb").read()
        gz = gzip.compress(raw)
        cut = os.path.join(work, "cut.pickle.gz")
        with open(cut, "wb") as f:
            f.write(gz[: len(gz) // 2])
        one_line_error(run([args.cli, "stats", cut]), cut, report, "a gzip file cut in half",
                       place=("that the gzip stream ends early", lambda m: "gzip stream ends early" in m))
        xz = bytearray(lzma.compress(raw, preset=1))
        for k in range(len(xz) // 2, len(xz) // 2 + 64):
            xz[k] ^= 0x5A
        bad = os.path.join(work, "damaged.xz")
        with open(bad, "wb") as f:
            f.write(bytes(xz))
        one_line_error(run([args.cli, "stats", bad]), bad, report, "an xz file with damaged bytes",
                       place=("that the xz data is corrupt", lambda m: "xz data is corrupt" in m or "pickle" in m))
    return report.finish("cli.compressed")


if __name__ == "__main__":
    sys.exit(main())
