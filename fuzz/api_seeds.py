#!/usr/bin/env python3
"""Seeds of fuzz/fuzz_api.c: small programs in its byte language.

    python3 fuzz/api_seeds.py fuzz/corpus/api fuzz/api.dict

writes one file per program below (the committed seeds) and the dictionary
of whole operations. The encoding is the
target's: a header for acm_domain_create, then an opcode byte and its
argument bytes per operation (read past the end as 0).
SPDX-License-Identifier: Apache-2.0
"""
import os
import sys

# opcodes (the enum of fuzz_api.c); 240 + op runs ops 0-15 on a NULL domain
(STEP, FACE, FORCE, COLLISION, PARAM, INIT_UNIFORM, INIT_FIELDS, SET_FIELD, GET_FIELD, PROBE,
 SAMPLE, STATS, LAYOUT, POLICY, LISTS, SAVE, EXPORT, AUTOTUNE, SOLID_SAMPLES, SOLID_MESH,
 SOLID_DESTROY, SOLID_STATE, SOLID_MISC, SMOKE_CREATE, SMOKE_DESTROY, EMITTER, SMOKE_QUERY, LOAD,
 CREATE, DESTROY, STEP2, SOLID_MISC2) = range(32)
NULL_DOMAIN = 240


def header(n=(8, 8, 8), visc=1, collision=4, precision=1, slabs=0, faces=0, face_vel=(),
           flags=0, extra=()):
    """acm_domain_create: visc indexes VISC (1: nu 0.1), precision 1 FP32 / 2 FP64,
    faces 2 bits per axis (0 periodic, 1 walls, 2 inlet+outlet, 3 wall+periodic)."""
    return bytes([flags, n[0] - 1, n[1] - 1, n[2] - 1, visc, collision, precision, slabs, 0, 0,
                  *extra, faces, *face_vel])


def centre(n):
    """coord() byte of the middle of an axis of n cells."""
    return round((n / 2 + 1) * 200 / (n + 2))


def solid_opts(n, motion=0, spc=0, extra_f=0, tail=()):
    """solid_options(): f, g, position, samples_per_cell index, seed, motion, max_samples."""
    return bytes([extra_f, 0, centre(n[0]), centre(n[1]), centre(n[2]), spc, 1, motion,
                  *tail, 63])


def seeds():
    n = (10, 10, 10)
    out = {}
    # a periodic box: steps, queries, fields out, a save that is loaded back
    out['box'] = header(n) + bytes([
        STEP, 8, STATS, 0, PROBE, 3, 4, 5, 0, SAMPLE, 2, 50, 60, 70, 10, 20, 30,
        GET_FIELD, 1, 0, 0, GET_FIELD, 4, 1, 0, SAVE, 0, LISTS, 0, STEP2, 4, EXPORT, 3, 0, 1, 2,
        LOAD, 2, 0x12, STEP, 2, STATS, 0])
    # a channel: walls along y, inlet and outlet along x, a body force, other models
    out['channel'] = header((12, 6, 4), faces=(1 << 2) | 2, face_vel=(64 + 10,)) + bytes([
        FORCE, 2, 70, 64, 64, STEP, 8, COLLISION, 0, 1, 0, STEP, 4, COLLISION, 1, 3, 1, 2, 120,
        STEP, 8, FACE, 3, 1, 2, 80, 64, 64, STEP, 3, STATS, 0])
    # solids: caller samples and a tetrahedron, steps, their queries, a smoke around them
    out['solids'] = header(n) + bytes([
        SOLID_SAMPLES, *solid_opts(n), 3, 24, 16, 16, 0, 8, 16, 16, 0, 16, 24, 16, 0, 16, 8, 16, 0,
        SOLID_MESH, 2, 0, *solid_opts(n, spc=1), 0,
        STEP, 4, SOLID_MISC, 0, 2, 0, SOLID_MISC, 1, 3, 0, SOLID_MISC, 1, 4, 0, 100, 100, 100,
        SOLID_MISC, 1, 5, 0, SOLID_STATE, 0, 0, 0, 2, 0, 70, STEP, 4,
        SMOKE_CREATE, 0, 4, 1,
        EMITTER, 0, 0, 1, 40, 60, 50, 40, 60, 50, 40, 60, 50, 0, 0, 2, 3, 0, 0,
        EMITTER, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 3, 1, 1,
        STEP, 8, SMOKE_QUERY, 0, 0, 0, SMOKE_QUERY, 0, 1, 0, SMOKE_QUERY, 0, 2, 0, LISTS, 0,
        SAVE, 0, LOAD, 2, 0x12, LISTS, 0, STEP, 2, SOLID_DESTROY, 0, STEP, 2, SMOKE_DESTROY, 0])
    # a free body: the tetrahedron at 10 times the fluid's density, in gravity
    out['free'] = header(n, precision=2) + bytes([
        SOLID_MESH, 2, 0, 8, 4, centre(n[0]), centre(n[1]), centre(n[2]), 1, 1, 2, 5, 0, 0,
        64, 40, 64, 63, 0, STEP, 8, STEP, 8, SOLID_MISC, 0, 2, 0, SOLID_STATE, 0, 0x10, 0, 0, 0,
        100])
    # divergence: rewind every step, a callback that tries everything, a force that blows up
    out['diverge'] = header((6, 6, 6), visc=5) + bytes([
        POLICY, 1, 1, 1, 0xff, STEP, 2, FORCE, 2, 0x80 | 0, 21, 64, 64, STEP, 4, STATS, 0,
        POLICY, 1, 0, 0, 0x7f, STEP, 4, STEP, 1, INIT_UNIFORM, 0, 1, STEP, 2])
    # layouts: CSoA groups, in-place streaming, FP64, and the autotuner
    out['layout'] = header((8, 4, 6)) + bytes([
        STEP, 3, LAYOUT, 4, 2, 1, 5, 7, 2, STEP, 3, LAYOUT, 4, 1, 8, 2, STEP, 2,
        LAYOUT, 4, 2, 7, 1, 8, 1, AUTOTUNE, 0, 0x20, STEP, 2, SAVE, 0])
    # hostile values: densities and populations the storage cannot hold
    out['hostile'] = header((4, 4, 4)) + bytes([
        INIT_UNIFORM, 7, 1, INIT_UNIFORM, 18, 1, INIT_FIELDS, 0, 2, 7, 1, 3, 0, 8, 0,
        INIT_FIELDS, 1, 0, 1, 5, 0, 4, 0,
        SET_FIELD, 4, 0, 0, 1, 5, 0, 6, 0, 26, 2, STATS, 0, STEP, 2,
        SET_FIELD, 3, 0, 8, 0x80, 21, 0, STEP, 2, PARAM, 1, 10, PARAM, 3, 17,
        NULL_DOMAIN + STEP, 1, NULL_DOMAIN + STATS, 0, NULL_DOMAIN + SAVE, 0])
    # slabs: z split in 3, faces, steps, a checkpoint of it
    out['slabs'] = header((6, 5, 9), slabs=3, faces=(1 << 2)) + bytes([
        STEP, 6, STATS, 0, PROBE, 2, 2, 8, 0, SAVE, 0, LOAD, 2, 0x12, STEP, 3,
        SOLID_SAMPLES, *solid_opts((6, 5, 9)), 0, 16, 16, 16, 0, CREATE, 0, 3, 3, 3, 2, 1, 2, 0,
        0, 0, 0, STEP, 8])
    return out


def phrases():
    """Whole operations for the dictionary (fuzz/api.dict): the mutator inserts them."""
    n = (10, 10, 10)
    return {
        'step8': bytes([STEP, 8]),
        'stats': bytes([STATS, 0]),
        'save_load_back': bytes([SAVE, 0, LOAD, 2, 0x12]),
        'solid_4_samples': bytes([SOLID_SAMPLES, *solid_opts(n), 3, 24, 16, 16, 0, 8, 16, 16, 0,
                                  16, 24, 16, 0, 16, 8, 16, 0]),
        'solid_tetrahedron': bytes([SOLID_MESH, 2, 0, *solid_opts(n, spc=1), 0]),
        'solid_free': bytes([SOLID_MESH, 2, 0, 8, 4, 100, 100, 100, 1, 1, 2, 5, 0, 0, 64, 40, 64,
                             63, 0]),
        'smoke_box': bytes([SMOKE_CREATE, 0, 4, 1, EMITTER, 0, 0, 1, 40, 60, 50, 40, 60, 50, 40,
                            60, 50, 0, 0, 2, 3, 0, 0]),
        'rewind_callback': bytes([POLICY, 1, 1, 1, 0xff]),
        'stop_callback': bytes([POLICY, 1, 0, 0, 0x7f]),
        'blow_up': bytes([FORCE, 2, 0x80, 21, 64, 64]),
        'layout_in_place': bytes([LAYOUT, 4, 1, 7, 2]),
        'layout_fp64': bytes([LAYOUT, 4, 1, 8, 2]),
        'layout_fp32': bytes([LAYOUT, 4, 1, 8, 1]),
        'walls_y': bytes([FACE, 2, 1, 1]),
        'pop_pair': bytes([SET_FIELD, 4, 0, 0, 1, 5, 0, 6, 0, 26, 2]),
        'autotune': bytes([AUTOTUNE, 0, 0x20]),
    }


def main():
    dest = sys.argv[1] if len(sys.argv) > 1 else 'fuzz/corpus/api'
    os.makedirs(dest, exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(dest, name), 'wb') as f:
            f.write(data)
    if len(sys.argv) > 2:
        with open(sys.argv[2], 'w') as f:
            f.write('# fuzz/fuzz_api.c: whole operations in its byte language (fuzz/api_seeds.py)\n')
            for name, data in phrases().items():
                f.write('%s="%s"\n' % (name, ''.join('\\x%02x' % b for b in data)))


if __name__ == '__main__':
    main()
