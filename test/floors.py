#!/usr/bin/env python3
"""The library's tree as floors (lib/README.md): check it, or count it.

  floors.py check SRC [BUILD CC]   fail (exit 1) on an include from a higher
                                   floor or a sibling folder, a source file in
                                   no folder of the table, two headers of one
                                   name; with BUILD, a call into a higher floor
                                   or a sibling folder or a loop between files
                                   (by the symbols their objects define and
                                   use), a source compiled without the OpenMP
                                   flag the rest has; with CC, a lib/core header
                                   that does not compile alone with lib/core's
                                   include set
  floors.py stats SRC [BUILD]      files per folder, the largest file, include
                                   and call arrows and those that run upward,
                                   loops between files

The floors come from the table in SRC/lib/README.md (`| floor | folder |`
rows), so the check holds the tree to the table that describes it. A tree
without that table (an older checkout) is counted with every folder on one
floor; --map FILE gives floors of its own ("path floor [folder]" lines, a path
being a file or a folder, and folder the one it counts as: to count an older
tree by the floors its files have now).
"""
import os
import re
import subprocess
import sys

SOURCE_EXT = ('.c', '.h', '.cu', '.cuh', '.cc')
GENERATED = {'vdb_config.h', 'acm_version.h'}  # written by meson into the build tree
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
GROUP = {}  # --map: the folder a path counts as (default: itself)
ROW = re.compile(r'^\|\s*(\d+)\s*\|\s*`?([\w/]+?)/?`?\s*\|', re.M)


def read_floors(src, map_file):
    """{folder or file (relative path): floor}."""
    floors = {}
    if map_file:
        for line in open(map_file):
            parts = line.split()
            if len(parts) in (2, 3):
                floors[parts[0].rstrip('/')] = int(parts[1])
                if len(parts) == 3:
                    GROUP[parts[0].rstrip('/')] = parts[2]
        return floors
    readme = os.path.join(src, 'lib', 'README.md')
    if os.path.exists(readme):
        for floor, folder in ROW.findall(open(readme).read()):
            floors[folder.rstrip('/')] = int(floor)
    return floors


def source_files(src):
    out = []
    for top in ('lib', 'cuda'):
        for root, dirs, files in os.walk(os.path.join(src, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(SOURCE_EXT):
                    out.append(os.path.relpath(os.path.join(root, f), src))
    return out


def folder_of(path, floors):
    """The deepest entry of the table that holds path (None: none)."""
    best = None
    for key in floors:
        if path == key or path.startswith(key + '/'):
            if best is None or len(key) > len(best):
                best = key
    return best


def resolve(src, path, name, by_name):
    """The file an include names: beside the includer, or the one file of that
    name in lib/ or cuda/; 'public' for <acmlbm/...>; None when unknown."""
    if name.startswith('acmlbm/'):
        return 'public'
    here = os.path.normpath(os.path.join(os.path.dirname(path), name))
    if os.path.exists(os.path.join(src, here)):
        return here
    hits = by_name.get(os.path.basename(name), [])
    return hits[0] if len(hits) == 1 else None


def includes(src, files, floors):
    """Arrows (from, to, name) and problems."""
    by_name = {}
    for f in files:
        if f.endswith(('.h', '.cuh')):
            by_name.setdefault(os.path.basename(f), []).append(f)
    problems = ['%s: headers of one name: %s' % (n, ', '.join(p))
                for n, p in sorted(by_name.items()) if len(p) > 1]
    arrows = []
    for f in files:
        for name in INCLUDE.findall(open(os.path.join(src, f), errors='replace').read()):
            to = resolve(src, f, name, by_name)
            if to is None:
                if os.path.basename(name) not in GENERATED:
                    problems.append('%s: #include "%s" names no file of the tree' % (f, name))
                continue
            if to != 'public' and to != f:
                arrows.append((f, to, name))
    return arrows, problems


def upward(arrows, floors):
    """Arrows into a higher floor, or into another folder of the same floor."""
    bad = []
    for f, to, name in arrows:
        a, b = folder_of(f, floors), folder_of(to, floors)
        if a is None or b is None or GROUP.get(a, a) == GROUP.get(b, b):
            continue
        if floors[b] > floors[a] or (floors[b] == floors[a]):
            bad.append('%s (floor %d) includes "%s" of %s (floor %d)' %
                       (f, floors[a], name, GROUP.get(b, b), floors[b]))
    return bad


def objects(build, files):
    """{object file: its source (relative path)} of the library's objects.
    meson names an object after its source: lib/ib/libacm_ib.a.p/solid.c.o, or
    lib_solid.c.o when the source lies in another folder; nvcc's are
    cuda/backend.o, cuda/kernels/lbm_fused_double.o (one per storage type)."""
    sources = [f for f in files if f.endswith(('.c', '.cu', '.cc'))]
    out = {}
    for root, dirs, names in os.walk(build):
        rel = os.path.relpath(root, build)
        if not rel.startswith(('lib', 'cuda')):
            continue
        for o in names:
            if not o.endswith('.o'):
                continue
            n = o[:-2]
            if not n.endswith(('.c', '.cu', '.cc')):
                n = re.sub(r'_(double|float|half)$', '', n) + '.cu'
            hits = [f for f in sources if f.replace('/', '_') == n or
                    (os.path.basename(f) == n and rel.startswith(os.path.dirname(f)))]
            if len(hits) == 1:
                out[os.path.join(root, o)] = hits[0]
    return out


def symbol_graph(build, files):
    """Arrows between source files: f -> g when f's object uses a symbol g's
    object defines."""
    defined, used = {}, {}
    for obj, f in objects(build, files).items():
        out = subprocess.run(['nm', obj], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in 'TDBR':
                defined.setdefault(parts[2], set()).add(f)
            elif len(parts) == 2 and parts[0] == 'U':
                used.setdefault(f, set()).add(parts[1])
    edges = {}
    for f, syms in used.items():
        for s in syms:
            for g in defined.get(s, ()):
                if g != f:
                    edges.setdefault(f, set()).add(g)
    return edges


def calls_up(edges, floors):
    """Calls into a higher floor, or into another folder of the same floor."""
    up = []
    for f, gs in sorted(edges.items()):
        for g in sorted(gs):
            a, b = folder_of(f, floors), folder_of(g, floors)
            if a is not None and b is not None and GROUP.get(a, a) != GROUP.get(b, b) and \
                    floors[b] >= floors[a]:
                up.append('%s (floor %d) calls %s (floor %d)' % (f, floors[a], g, floors[b]))
    return up


def loops(edges):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    nodes = set(edges) | {g for v in edges.values() for g in v}

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def core_compiles(src, build, cc, floors):
    """Every lib/core header compiled alone with lib/core's include set."""
    core = [k for k, v in floors.items() if k.endswith('core')]
    problems = []
    for folder in core:
        for f in sorted(os.listdir(os.path.join(src, folder))):
            if not f.endswith('.h') or f.endswith('_tmpl.h'):  # templates need their macros
                continue
            cmd = cc.split() + ['-fsyntax-only', '-std=c11', '-x', 'c',
                                '-I' + os.path.join(src, 'include'),
                                '-I' + os.path.join(build, 'include', 'acmlbm'),
                                '-I' + os.path.join(src, folder), os.path.join(src, folder, f)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                problems.append('%s/%s does not compile with lib/core\'s include set:\n%s' %
                                (folder, f, r.stderr.strip()))
    return problems


def same_flags(build):
    """Every source of the library compiled with OpenMP when any is: the floors'
    static libraries take their flags one by one, and a pragma compiled
    without -fopenmp is silently serial."""
    path = os.path.join(build, 'compile_commands.json')
    if not os.path.exists(path):
        return []
    import json
    # the floors' own objects (lib/<floor>/libacm_*.a.p/, cuda/libacm_cuda.a.p/); the
    # row kernels are compiled apart, per instruction set, without threads
    cmds = [c for c in json.load(open(path))
            if re.match(r'(lib|cuda)/.*libacm_\w+\.a\.p/', c['output'])
            and 'cpu_kernel' not in c['output']]
    with_omp = [c for c in cmds if '-fopenmp' in c['command']]
    if not with_omp:
        return []
    return ['%s is compiled without -fopenmp, the rest of the library with it' %
            os.path.relpath(c['file'], build) for c in cmds if '-fopenmp' not in c['command']]


def lines(src, f):
    return sum(1 for _ in open(os.path.join(src, f), errors='replace'))


def stats(src, build, floors):
    files = source_files(src)
    arrows, _ = includes(src, files, floors)
    per = {}
    for f in files:
        per.setdefault(os.path.dirname(f), []).append(f)
    print('files per folder:')
    for d in sorted(per):
        n = sum(lines(src, f) for f in per[d])
        print('  %-14s %3d files, %6d lines' % (d + '/', len(per[d]), n))
    big = max(files, key=lambda f: lines(src, f))
    print('largest file: %s (%d lines)' % (big, lines(src, big)))
    print('include arrows between files: %d' % len(arrows))
    print('include arrows running up a floor or across a floor: %d' %
          len(upward(arrows, floors)))
    for b in upward(arrows, floors):
        print('  ' + b)
    if build:
        edges = symbol_graph(build, files)
        up = calls_up(edges, floors)
        print('call arrows between files (by symbols): %d' % sum(len(v) for v in edges.values()))
        print('call arrows running up a floor or across a floor: %d' % len(up))
        for u in up:
            print('  ' + u)
        found = loops(edges)
        print('loops between files (by symbols): %d' % len(found))
        for comp in found:
            print('  ' + ' -> '.join(comp))


def check(src, build, cc, floors):
    if not floors:
        print('no floors: lib/README.md has no table of | floor | folder | rows')
        return 1
    files = source_files(src)
    problems = ['%s: in no folder of the table in lib/README.md' % f for f in files
                if folder_of(f, floors) is None]
    problems += ['%s: a folder of the table that does not exist' % k for k in floors
                 if not os.path.isdir(os.path.join(src, k))]
    arrows, p = includes(src, files, floors)
    problems += p + upward(arrows, floors)
    if build:
        edges = symbol_graph(build, files)
        problems += calls_up(edges, floors)
        problems += ['a loop between files: ' + ' -> '.join(c) for c in loops(edges)]
    if build:
        problems += same_flags(build)
    if build and cc:
        problems += core_compiles(src, build, cc, floors)
    for p in problems:
        print('FAIL: ' + p)
    print('%d files in %d folders, %d include arrows: %s' %
          (len(files), len(floors), len(arrows), 'ok' if not problems else
           '%d problems' % len(problems)))
    return 1 if problems else 0


def main(argv):
    map_file = None
    if '--map' in argv:
        i = argv.index('--map')
        map_file = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if len(argv) < 3 or argv[1] not in ('check', 'stats'):
        print(__doc__)
        return 2
    src = argv[2]
    build = argv[3] if len(argv) > 3 and argv[3] else None
    floors = read_floors(src, map_file)
    if argv[1] == 'stats':
        if not floors:  # an older tree: every folder of lib/ and cuda/ on one floor
            floors = {d: 1 for d in {os.path.dirname(f) for f in source_files(src)}}
        stats(src, build, floors)
        return 0
    return check(src, build, argv[4] if len(argv) > 4 else None, floors)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
