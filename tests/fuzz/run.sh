#!/usr/bin/env bash
# Runs the libFuzzer target fuzz_snapshot_reader for SECONDS seconds; exits non-zero on any finding.
#
#   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DMEMLENS_FUZZ=ON
#   tests/fuzz/run.sh build-fuzz 300
#
# The corpus lives in BUILD_DIR/fuzz-corpus and grows from run to run. It is seeded from
#  - the real snapshots in ../shared/snapshots (read in place, never copied; skipped if absent),
#  - small hand-written snapshot-like pickles (protocols 0, 2, 4, 5) made by python here, and the
#    same documents in memory_viz's JSON form (among them a training loop whose entries repeat),
#  - cut-down copies of the real snapshots (a few segments and trace entries, < 64 KiB), so that
#    real structure survives -max_len.
# Crash reproducers go to BUILD_DIR/fuzz-artifacts/; replay one with
#   BUILD_DIR/tests/fuzz/fuzz_snapshot_reader BUILD_DIR/fuzz-artifacts/crash-...
set -euo pipefail

if [[ $# -lt 1 ]]; then
    echo "usage: $0 BUILD_DIR [SECONDS=60] [extra libFuzzer flags...]" >&2
    exit 2
fi
BUILD_DIR=$(cd "$1" && pwd)
SECS=${2:-60}
shift $(( $# >= 2 ? 2 : 1 ))
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
FUZZER="$BUILD_DIR/tests/fuzz/fuzz_snapshot_reader"
PYTHON=${PYTHON:-/usr/bin/python3}
[[ -x $PYTHON ]] || PYTHON=python3

if [[ ! -x $FUZZER ]]; then
    echo "building fuzz_snapshot_reader in $BUILD_DIR" >&2
    cmake --build "$BUILD_DIR" --target fuzz_snapshot_reader
fi

CORPUS="$BUILD_DIR/fuzz-corpus"
SEEDS="$BUILD_DIR/fuzz-seeds"
ARTIFACTS="$BUILD_DIR/fuzz-artifacts"
mkdir -p "$CORPUS" "$SEEDS" "$ARTIFACTS"

SNAPSHOTS="$REPO/../shared/snapshots"
SEED_DIRS=("$SEEDS")
if [[ -d $SNAPSHOTS ]]; then
    SEED_DIRS+=("$SNAPSHOTS")
    echo "seeding from real snapshots in $SNAPSHOTS"
else
    echo "SKIP real-snapshot seeds: $SNAPSHOTS not found (hand-written seeds only)"
    SNAPSHOTS=""
fi

"$PYTHON" - "$SEEDS" "$SNAPSHOTS" <<'PY'
import io, json, os, pickle, sys

out, real = sys.argv[1], sys.argv[2]

def frame(name, filename, line):
    return {'name': name, 'filename': filename, 'line': line}

py = [frame('forward', 'model.py', 41), frame('_call_impl', 'torch/nn/modules/module.py', 1750),
      frame('train_step', 'train.py', 12), frame('init_gpu_context', 'torch/_subclasses/fake_tensor.py', 2**64 - 1)]
cpp = [frame('c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, '
             'CUstream_st*)' + ' ' * 260, '??', 0), frame('at::empty(c10::ArrayRef<long>)', '', 0),
       frame('_PyEval_EvalFrameDefault', './Objects/call.c', 0)]
stackA = [py[0], py[1], py[2]]            # shared list, shared dicts: pickle memoises them
stackB = [cpp[0], cpp[1], py[0], py[2]]
T0 = 1_700_000_000_000_000
B = 0x7f3a_0000_0000

def entry(action, addr, size, i, frames=None, era='U'):
    e = {'action': action, 'addr': addr, 'size': size, 'stream': 0}
    if era in 'FTCU' and frames is not None:
        e['frames'] = frames
    if era in 'TCU':
        e['time_us'] = T0 + 10 * i
    if era in 'CU':
        e['compile_context'] = 'N/A'
    if era == 'U':
        e['user_metadata'] = ''
    return e

def trace(era):
    t = [entry('segment_alloc', B, 2 << 20, 0, [], era),
         entry('alloc', B, 512, 1, stackA, era),
         entry('alloc', B + 512, 1000, 2, stackB, era),
         entry('free_requested', B, 512, 3, stackA, era),
         entry('free_completed', B, 512, 4, stackA, era),
         entry('alloc', B, 1536, 5, stackA, era),
         {'action': 'oom', 'device_free': 1234, 'size': 1 << 30, 'stream': 0},
         entry('snapshot', 0, 2536, 7, None, era)]
    if era == 'U':
        t.append(entry('free_requested', B + (8 << 20), 4096, 8, stackB, era))  # alloc not in the trace
        t.append(entry('free_completed', B + (8 << 20), 4096, 9, stackB, era))
    return t

def segments(era, device=0):
    seg = {'device': device, 'address': B, 'total_size': 2 << 20, 'allocated_size': 2560, 'active_size': 2560,
           'requested_size': 2536, 'stream': 0, 'segment_type': 'small'}
    blocks = [{'address': B, 'size': 1536, 'requested_size': 1536, 'state': 'active_allocated', 'frames': stackA},
              {'address': B + 1536, 'size': 1024, 'requested_size': 1000, 'state': 'active_allocated', 'frames': stackB},
              {'address': B + 2560, 'size': (2 << 20) - 2560, 'requested_size': 0, 'state': 'inactive', 'frames': []}]
    if era == 'H':
        for b in blocks:
            del b['address']
            f = b.pop('frames')
            b['history'] = [{'addr': B, 'real_size': b['size'], 'frames': f}] if f else []
    else:
        seg.update(segment_pool_id=(0, 0), is_expandable=False, frames=[])
    seg['blocks'] = blocks
    big = {'device': device, 'address': B + (4 << 20), 'total_size': 20 << 20, 'allocated_size': 0, 'active_size': 0,
           'requested_size': 0, 'stream': 123323568, 'segment_type': 'large', 'segment_pool_id': (1, 0),
           'is_expandable': True, 'frames': stackB,
           'blocks': [{'address': B + (4 << 20), 'size': 20 << 20, 'requested_size': 7, 'state': 'active_pending_free',
                       'frames': stackB}]}
    return [seg] if era == 'H' else [seg, big]

settings = {'PYTORCH_CUDA_ALLOC_CONF': 'expandable_segments:True', 'max_split_size': -1,
            'garbage_collection_threshold': 0.0, 'expandable_segments': True, 'pinned_num_register_threads': 1,
            'release_lock_on_cudamalloc': False, 'pinned_use_cuda_host_register': False,
            'roundup_power2_divisions': {'1': 1, '2': 2, '4': 4}, 'graph_capture_record_stream_reuse': False}
annotations = [{'stage': 'END', 'name': 'iter_0', 'device': 0, 'time_us': T0},
               {'stage': 'START', 'name': 'Optimizer.step#AdamW.step', 'device': 0, 'time_us': T0 + 5}]

docs = {
    'legacy20': {'segments': segments('H'), 'device_traces': [trace('H')]},
    'dict21': {'segments': segments('F'), 'device_traces': [trace('F'), []]},
    'dict22': {'segments': segments('T'), 'device_traces': [trace('T')]},
    'dict26': {'segments': segments('T') + segments('T', 1), 'device_traces': [trace('T'), trace('T')],
               'allocator_settings': settings, 'external_annotations': annotations},
    'dict211': {'segments': segments('U'), 'device_traces': [trace('U'), [], [], []],
                'allocator_settings': settings, 'external_annotations': annotations},
    'bare_list': segments('F', 1),
    'empty': {'segments': [], 'device_traces': [[], []]},
    'expandable': {'segments': segments('U'), 'device_traces': [[
        entry('segment_map', B + (4 << 20), 20 << 20, 0, [], 'U'),
        entry('alloc', B + (4 << 20), 7, 1, stackB, 'U'),
        entry('free_requested', B + (4 << 20), 7, 2, stackB, 'U'),
        entry('segment_unmap', B + (30 << 20), 2 << 20, 3, [], 'U'),
        entry('segment_free', B + (40 << 20), 2 << 20, 4, None, 'U'),
        entry('free', B + 1536, 1000, 5, None, 'U'),
        entry('user_defined', 0, 0, 6, None, 'U')]]},
    'not_a_snapshot': {'phrases': ['hello', 'world'], 'n': 3},
}
# a training loop: the same entries every iteration, their numbers changing (addresses, sizes
# across widths, times), free_completed sharing its free_requested's frames list: what the
# reader's templates replay (model/src/DictTemplates)
loop = []
for it in range(12):
    for k, stack in enumerate((stackA, stackB, [py[1], cpp[2]])):
        frames = list(stack)
        a, size = B + 4096 * (3 * it + k), (250, 70000, 1 << 33)[k] + it
        loop += [entry('alloc', a, size, 9 * it + 3 * k, frames), entry('free_requested', a, size, 9 * it + 3 * k + 1, frames),
                 entry('free_completed', a, size, 9 * it + 3 * k + 2, frames)]
docs['loop'] = {'segments': segments('U'), 'device_traces': [loop], 'allocator_settings': settings}
n = 0
for name, doc in docs.items():
    for proto in (0, 2, 4, 5):
        with open(os.path.join(out, f'{name}.p{proto}.pickle'), 'wb') as f:
            pickle.dump(doc, f, protocol=proto)
        n += 1
    # memory_viz's JSON form of the same document (tuples become lists, as json.dump writes them)
    with open(os.path.join(out, f'{name}.json'), 'w') as f:
        json.dump(doc, f)
    n += 1

# Cut-down copies of the real snapshots. The files hold plain data; this unpickler refuses classes.
class DataOnly(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f'refusing class {module}.{name}')

if real:
    for fn in sorted(os.listdir(real)):
        path = os.path.join(real, fn)
        if not os.path.isfile(path) or not fn.endswith(('.pickle', '.pkl')):
            continue
        try:
            with open(path, 'rb') as f:
                snap = DataOnly(f).load()
        except Exception as e:
            continue
        for keep in (2, 8):
            if isinstance(snap, list):
                small = snap[:keep]
            elif isinstance(snap, dict) and 'segments' in snap:
                small = dict(snap)
                small['segments'] = [dict(s, blocks=s.get('blocks', [])[:4 * keep]) for s in snap['segments'][:keep]]
                if isinstance(snap.get('device_traces'), list):
                    small['device_traces'] = [t[-4 * keep:] if isinstance(t, list) else t for t in snap['device_traces']]
                if isinstance(snap.get('external_annotations'), list):
                    small['external_annotations'] = snap['external_annotations'][:keep]
            else:
                continue
            data = pickle.dumps(small, protocol=4)
            if len(data) <= 65536:
                with open(os.path.join(out, f'real-{keep}-{fn}'), 'wb') as f:
                    f.write(data)
                n += 1
print(f'{n} seed pickles and JSON files in {out}')
PY

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

status=0
"$FUZZER" -max_total_time="$SECS" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -dict="$REPO/tests/fuzz/dict/pickle.dict" -artifact_prefix="$ARTIFACTS/" -print_final_stats=1 \
    "$@" "$CORPUS" "${SEED_DIRS[@]}" || status=$?

if [[ $status -ne 0 ]]; then
    echo "FUZZ FINDING (exit $status); reproducers in $ARTIFACTS:" >&2
    ls -1t "$ARTIFACTS" | head -5 | sed "s|^|  $ARTIFACTS/|" >&2
    echo "replay: $FUZZER $ARTIFACTS/<file>" >&2
    exit "$status"
fi
echo "fuzzing finished after ${SECS}s without findings"
