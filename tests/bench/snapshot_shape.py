#!/usr/bin/env python3
"""Shape report of PyTorch CUDA memory snapshot pickles, for comparing generated benchmark files
with real ones.

    snapshot_shape.py FILE... [--max-mb M] [--table] [--json]

The file is never unpickled with pickle: its opcodes are read with pickletools.genops and
interpreted by a small stack machine here that builds only dict, list, tuple, str, int, float,
bool and None (any class-loading opcode becomes an inert placeholder), keeping object identity,
so memo sharing is visible. --max-mb M reads only the first M MB (default 256); the trace
entries complete by then are reported (a streaming reader of a truncated file).

Figures per file (trace figures are over all device traces together):
  entries           trace entries read
  B/entry           bytes per trace entry: the span from the first entry's EMPTY_DICT to the
                    last one's, divided by the entries between them
  ops/entry         pickle opcodes per trace entry in that span (ops/KB too)
  keys/entry        keys per trace entry (mean)
  frames/entry      length of an entry's frames list: mean, p50, max (entries with a list)
  lists/entry       distinct frames-list objects per entry that has frames (1.0: each entry
                    has its own list; < 1: lists shared between entries)
  stacks            distinct stacks (frames lists with different contents)
  refs/dict         frame references written (sum of lengths of the distinct lists) per
                    distinct frame dict: how often each frame dict is reused
  fdict inline %    frame references written out as a whole dict (the first time) rather than
                    as a memo get, in %
  str get %         string memo gets / all string occurrences (inline + gets), over the file
  str dup           inline string objects / distinct string values: > 1 when equal strings
                    are separate objects (written again rather than memoised)
  fd-str shared %   of the name/filename values of frame dicts, the share that is a string
                    object also used by another frame dict (torch writes a fresh str per dict)
  opcode shares     % of all opcodes, per opcode
"""
import argparse
import json
import os
import pickletools
import statistics
import sys
from collections import Counter


class Placeholder:
    """Stands for anything a class-loading opcode would make."""
    __slots__ = ('what',)

    def __init__(self, what):
        self.what = what

    def __repr__(self):
        return f'<{self.what}>'


class Mark:
    pass


class Truncated(Exception):
    pass


class LimitedReader:
    """A file object that ends (raising Truncated on the next read) after `limit` bytes."""

    def __init__(self, f, limit):
        self.f, self.left = f, limit

    def read(self, n=-1):
        if self.left <= 0:
            raise Truncated()
        if n < 0 or n > self.left:
            n = self.left
        data = self.f.read(n)
        self.left -= len(data)
        return data

    def readline(self):
        line = self.f.readline(max(self.left, 0))
        self.left -= len(line)
        if self.left <= 0 and not line.endswith(b'\n'):
            raise Truncated()
        return line

    def tell(self):
        return self.f.tell()


class Machine:
    def __init__(self):
        self.stack = []
        self.metastack = []
        self.memo = {}
        self.ops = Counter()
        self.op_bytes = Counter()
        self.dict_pos = {}  # id(dict) -> offset of its EMPTY_DICT
        self.keep = []  # keeps dicts alive so that ids stay unique
        self.op_index_at = []  # (offset, opcode count) for dicts, parallel to keep
        self.n_ops = 0
        self.str_inline = 0
        self.str_get = 0
        self.get_by_type = Counter()
        self.memo_by_type = Counter()
        self.str_values = set()
        self.result = None
        self.truncated = False
        self.end_pos = 0

    def pop_mark(self):
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def memo_put(self, idx, obj):
        self.memo[idx] = obj
        self.memo_by_type[type(obj).__name__] += 1

    def run(self, f):
        st = self.stack
        last_pos = 0
        last_name = None
        try:
            for op, arg, pos in pickletools.genops(f):
                name = op.name
                self.n_ops += 1
                self.ops[name] += 1
                if last_name is not None:
                    self.op_bytes[last_name] += pos - last_pos
                last_pos, last_name = pos, name
                st = self.stack
                if name in ('PROTO', 'FRAME'):
                    pass
                elif name == 'EMPTY_DICT':
                    d = {}
                    self.dict_pos[id(d)] = (pos, self.n_ops)
                    self.keep.append(d)
                    st.append(d)
                elif name == 'EMPTY_LIST':
                    st.append([])
                elif name == 'EMPTY_TUPLE':
                    st.append(())
                elif name == 'MARK':
                    self.metastack.append(st)
                    self.stack = []
                elif name in ('SHORT_BINUNICODE', 'BINUNICODE', 'BINUNICODE8', 'UNICODE', 'SHORT_BINSTRING',
                              'BINSTRING', 'STRING'):
                    s = arg if isinstance(arg, str) else str(arg)
                    self.str_inline += 1
                    self.str_values.add(s)
                    st.append(s)
                elif name in ('SHORT_BINBYTES', 'BINBYTES', 'BINBYTES8', 'BYTEARRAY8'):
                    st.append(bytes(arg))
                elif name in ('BININT', 'BININT1', 'BININT2', 'LONG1', 'LONG4', 'INT', 'LONG', 'LONG_BINGET_'):
                    st.append(arg)
                elif name in ('BINFLOAT', 'FLOAT'):
                    st.append(arg)
                elif name == 'NEWTRUE':
                    st.append(True)
                elif name == 'NEWFALSE':
                    st.append(False)
                elif name == 'NONE':
                    st.append(None)
                elif name == 'MEMOIZE':
                    self.memo_put(len(self.memo), st[-1])
                elif name in ('BINPUT', 'LONG_BINPUT', 'PUT'):
                    self.memo_put(arg, st[-1])
                elif name in ('BINGET', 'LONG_BINGET', 'GET'):
                    obj = self.memo[arg]
                    t = type(obj).__name__
                    self.get_by_type[t] += 1
                    if t == 'str':
                        self.str_get += 1
                    st.append(obj)
                elif name == 'APPEND':
                    v = st.pop()
                    st[-1].append(v)
                elif name == 'APPENDS':
                    items = self.pop_mark()
                    self.stack[-1].extend(items)
                elif name == 'SETITEM':
                    v = st.pop()
                    k = st.pop()
                    st[-1][k] = v
                elif name == 'SETITEMS':
                    items = self.pop_mark()
                    d = self.stack[-1]
                    for i in range(0, len(items), 2):
                        d[items[i]] = items[i + 1]
                elif name == 'TUPLE1':
                    st[-1] = (st[-1],)
                elif name == 'TUPLE2':
                    st[-2:] = [tuple(st[-2:])]
                elif name == 'TUPLE3':
                    st[-3:] = [tuple(st[-3:])]
                elif name == 'TUPLE':
                    items = self.pop_mark()
                    self.stack.append(tuple(items))
                elif name == 'POP':
                    st.pop()
                elif name == 'POP_MARK':
                    self.pop_mark()
                elif name == 'DUP':
                    st.append(st[-1])
                elif name in ('GLOBAL',):
                    st.append(Placeholder(f'global {arg}'))
                elif name == 'STACK_GLOBAL':
                    st[-2:] = [Placeholder('stack_global')]
                elif name in ('REDUCE', 'NEWOBJ'):
                    st[-2:] = [Placeholder(name.lower())]
                elif name == 'NEWOBJ_EX':
                    st[-3:] = [Placeholder(name.lower())]
                elif name == 'BUILD':
                    st.pop()
                elif name in ('INST', 'OBJ'):
                    self.pop_mark()
                    self.stack.append(Placeholder(name.lower()))
                elif name == 'STOP':
                    self.result = st.pop()
                    self.end_pos = pos + 1
                    break
                else:
                    raise ValueError(f'opcode {name} at {pos} not handled')
        except (Truncated, ValueError) as e:  # genops raises ValueError on a cut-off argument
            if isinstance(e, ValueError) and 'not handled' in str(e):
                raise
            self.truncated = True
            self.end_pos = last_pos


def find_traces(m):
    """The trace lists: device_traces of the result, or, for a truncated file, the lists of
    entry dicts found on the stacks."""
    doc = m.result
    if isinstance(doc, dict) and isinstance(doc.get('device_traces'), list):
        return [t for t in doc['device_traces'] if isinstance(t, list)]
    if doc is not None:
        return []
    found = []
    seen = set()

    def visit(x, depth):
        if depth > 4 or id(x) in seen:
            return
        seen.add(id(x))
        if isinstance(x, list):
            if x and isinstance(x[0], dict) and 'action' in x[0]:
                found.append(x)
                return
            for y in x[:50]:
                visit(y, depth + 1)
        elif isinstance(x, dict):
            for y in list(x.values())[:50]:
                visit(y, depth + 1)

    for s in m.metastack + [m.stack]:
        # the items on a MARKed stack that are entry dicts belong to the trace being built
        entries = [x for x in s if isinstance(x, dict) and 'action' in x]
        if entries:
            found.append(entries)
        for x in s:
            visit(x, 0)
    return found


def pct(a, b):
    return 100.0 * a / b if b else float('nan')


def analyse(path, max_mb):
    size = os.path.getsize(path)
    m = Machine()
    with open(path, 'rb') as f:
        reader = LimitedReader(f, int(max_mb * 1e6)) if max_mb and size > max_mb * 1e6 else f
        m.run(reader)
    traces = find_traces(m)
    entries = [e for t in traces for e in t if isinstance(e, dict)]
    r = {'file': os.path.basename(path), 'bytes': size, 'read_bytes': m.end_pos or size,
         'truncated': m.truncated, 'entries': len(entries), 'ops': m.n_ops}
    if entries:
        first = m.dict_pos.get(id(entries[0]))
        last = m.dict_pos.get(id(entries[-1]))
        if first and last and len(entries) > 1:
            r['bytes_per_entry'] = (last[0] - first[0]) / (len(entries) - 1)
            r['ops_per_entry'] = (last[1] - first[1]) / (len(entries) - 1)
        else:
            r['bytes_per_entry'] = r['read_bytes'] / len(entries)
            r['ops_per_entry'] = m.n_ops / len(entries)
        r['keys_per_entry'] = statistics.fmean(len(e) for e in entries)
        r['keys'] = sorted({k for e in entries[:1000] for k in e})
        r['actions'] = dict(Counter(e.get('action') for e in entries).most_common())
        with_frames = [e['frames'] for e in entries if isinstance(e.get('frames'), list)]
        nonempty = [fl for fl in with_frames if fl]
        r['entries_with_frames'] = len(nonempty)
        if nonempty:
            lens = sorted(len(fl) for fl in nonempty)
            r['frames_mean'] = statistics.fmean(lens)
            r['frames_p50'] = lens[len(lens) // 2]
            r['frames_max'] = lens[-1]
            lists = {}
            for fl in nonempty:
                lists[id(fl)] = fl
            r['lists_per_entry'] = len(lists) / len(nonempty)
            use = Counter(id(fl) for fl in nonempty)
            r['entries_sharing_list_pct'] = pct(sum(c for c in use.values() if c > 1), len(nonempty))
            refs = sum(len(fl) for fl in lists.values())
            fdicts = {}
            for fl in lists.values():
                for fd in fl:
                    fdicts[id(fd)] = fd
            r['stacks'] = len({tuple(id(fd) for fd in fl) for fl in lists.values()})
            r['frame_refs'] = refs
            r['frame_dicts'] = len(fdicts)
            r['refs_per_dict'] = refs / len(fdicts)
            r['fdict_inline_pct'] = pct(len(fdicts), refs)
            r['frame_dicts_per_entry'] = len(fdicts) / len(entries)
            # string objects inside frame dicts: shared between dicts or one per dict?
            owners = Counter()
            values = set()
            n_vals = 0
            for fd in fdicts.values():
                if not isinstance(fd, dict):
                    continue
                for k in ('name', 'filename'):
                    v = fd.get(k)
                    if isinstance(v, str):
                        owners[id(v)] += 1
                        values.add(v)
                        n_vals += 1
            r['fd_str_shared_pct'] = pct(sum(c for c in owners.values() if c > 1), n_vals)
            r['fd_str_objects_per_value'] = len(owners) / len(values) if values else float('nan')
    r['str_inline'] = m.str_inline
    r['str_get'] = m.str_get
    r['str_get_pct'] = pct(m.str_get, m.str_inline + m.str_get)
    r['str_distinct'] = len(m.str_values)
    r['str_dup'] = m.str_inline / len(m.str_values) if m.str_values else float('nan')
    r['memo_gets'] = dict(m.get_by_type)
    r['memo_puts'] = dict(m.memo_by_type)
    r['opcode_pct'] = {k: round(pct(v, m.n_ops), 2) for k, v in m.ops.most_common()}
    r['opcode_bytes_pct'] = {k: round(pct(v, sum(m.op_bytes.values())), 2) for k, v in m.op_bytes.most_common()}
    return r


def fmt(v, spec):
    if v is None:
        return '-'
    if isinstance(v, float) and v != v:
        return '-'
    return format(v, spec)


TABLE = [  # header, key, format, width
    ('file', 'file', 's', 46), ('MB', 'bytes', None, 7), ('entries', 'entries', 'd', 9),
    ('B/ent', 'bytes_per_entry', '.0f', 6), ('ops/ent', 'ops_per_entry', '.0f', 7),
    ('keys', 'keys_per_entry', '.1f', 4), ('fr/ent', 'frames_mean', '.1f', 6), ('p50', 'frames_p50', 'd', 4),
    ('max', 'frames_max', 'd', 4), ('list/ent', 'lists_per_entry', '.2f', 8),
    ('stacks', 'stacks', 'd', 6), ('refs/fd', 'refs_per_dict', '.0f', 7), ('fd/ent', 'frame_dicts_per_entry', '.3f', 6),
    ('fd inl%', 'fdict_inline_pct', '.2f', 7), ('strget%', 'str_get_pct', '.1f', 7),
    ('strdup', 'str_dup', '.2f', 6), ('fdstr sh%', 'fd_str_shared_pct', '.1f', 9),
]
SHARE_OPS = ['BINGET', 'LONG_BINGET', 'MEMOIZE', 'SHORT_BINUNICODE', 'BINUNICODE', 'EMPTY_DICT', 'EMPTY_LIST',
             'MARK', 'SETITEMS', 'APPENDS', 'APPEND', 'LONG1', 'BININT1', 'BININT2', 'BININT']


def print_table(rows):
    head = ' '.join(f'{h:>{w}}' if i else f'{h:<{w}}' for i, (h, _, _, w) in enumerate(TABLE))
    print(head)
    for r in rows:
        cells = []
        for i, (h, k, spec, w) in enumerate(TABLE):
            if k == 'bytes':
                v = f'{r["bytes"] / 1e6:.1f}'
            elif k == 'file':
                v = r['file'][:w]
            else:
                v = fmt(r.get(k), spec)
            cells.append(f'{v:<{w}}' if i == 0 else f'{v:>{w}}')
        print(' '.join(cells))
    print()
    print('opcode shares, % of all opcodes')
    print(f'{"file":<46} ' + ' '.join(f'{o[:8]:>8}' for o in SHARE_OPS))
    for r in rows:
        print(f'{r["file"][:46]:<46} ' + ' '.join(f'{r["opcode_pct"].get(o, 0):8.2f}' for o in SHARE_OPS))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('files', nargs='+')
    ap.add_argument('--max-mb', type=float, default=256, help='read at most this many MB of each file (0: all)')
    ap.add_argument('--table', action='store_true', help='one line per file (default: a report per file)')
    ap.add_argument('--json', action='store_true')
    args = ap.parse_args()
    rows = []
    for p in args.files:
        try:
            rows.append(analyse(p, args.max_mb))
        except Exception as e:  # a broken or foreign file: say so and go on
            print(f'{p}: {type(e).__name__}: {e}', file=sys.stderr)
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
    elif args.table:
        print_table(rows)
    else:
        for r in rows:
            print(f'== {r["file"]}' + (f' (first {r["read_bytes"] / 1e6:.0f} MB)' if r['truncated'] else ''))
            for k, v in r.items():
                if k in ('file', 'opcode_pct', 'opcode_bytes_pct'):
                    continue
                print(f'  {k:24} {round(v, 3) if isinstance(v, float) else v}')
            print('  opcode %               ' + ', '.join(f'{k} {v}' for k, v in list(r['opcode_pct'].items())[:14]))
            print('  opcode bytes %         ' +
                  ', '.join(f'{k} {v}' for k, v in list(r['opcode_bytes_pct'].items())[:10]))
    return 0 if rows else 1


if __name__ == '__main__':
    sys.exit(main())
