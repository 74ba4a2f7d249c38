/*
 * libacmlbm -- the checkpoint file format (docs/checkpoint.md) that saving
 * (lib/io/checkpoint_save.c) and loading (lib/io/checkpoint_load.c) share: its
 * constants and section table, the CRC-32C, the byte-level records and the
 * fixed records' encodings (lib/io/checkpoint_format.c).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_CHECKPOINT_FORMAT_H
#define ACMLBM_CHECKPOINT_FORMAT_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */
#include <stdint.h>  /* uint32_t, int32_t, uint64_t, int64_t */

#include "acm_private.h" /* acm_collision_options, ACM_FACE_COUNT */
#include "smoke.h"       /* acm_smoke, smoke_emitter, acm_smoke_counts */
#include "solid.h"       /* acm_solid */
#include "state.h"       /* acm_snapshot, acm_solid_copy */

ACM_BEGIN_DECLS

/* ---- the format (docs/checkpoint.md) -------------------------------------------------- */

extern const char ckpt_magic[8]; /* ACMLBMCK */
#define CKPT_VERSION 1u
#define CKPT_ENDIAN_MARK 0x01020304u
#define CKPT_HEADER_SIZE 40u
#define CKPT_ENTRY_SIZE 32u
#define CKPT_MAX_SECTIONS (1u << 20)

enum ckpt_section {
    SEC_SETTINGS = 1,
    SEC_COUNTERS = 2,
    SEC_POPULATIONS = 3,
    SEC_FORCE = 4,
    SEC_TAU = 5,
    SEC_IB_FORCE = 6,
    SEC_IB_MASK = 7,
    SEC_SOLID = 8,
    SEC_SMOKE = 9,
    SEC_FACE_VALUES = 10, /* 1.8: a face's values (acm_domain_set_face_values), index = face */
    SEC_ABSORBER = 11,    /* 1.9: a face's absorbing layer (acm_domain_set_face_absorber), index
                             = face: cells, strength, density, velocity as 6 doubles */
    SEC_MOMENTS = 12,     /* after 1.12: moment storage's moments, 10 doubles a cell
                             (lib/core/moments.h order) */
    SEC_LAST = SEC_MOMENTS
};

typedef struct ckpt_entry {
    uint32_t type, index;
    uint64_t offset, size;
    uint32_t crc, reserved;
} ckpt_entry;

/* ---- CRC-32C (Castagnoli, reflected 0x82F63B78; the iSCSI/ext4 checksum) ---------- */

/* Continue a CRC-32C: crc32c(a b) = acm__crc32c(acm__crc32c(0, a), b). */
uint32_t acm__crc32c(uint32_t crc, const void *data, size_t n);

/* ---- small fixed-layout records ------------------------------------------------------- */

/* A record of scalars in native byte order (the header's mark says which). */
typedef struct rec {
    unsigned char b[1024];
    size_t n;   /* written, or read so far */
    size_t end; /* reading: bytes present */
    bool bad;   /* reading: past the end */
} rec;

void ckpt_put(rec *r, const void *p, size_t n);
void ckpt_put_u32(rec *r, uint32_t v);
void ckpt_put_u64(rec *r, uint64_t v);
uint32_t ckpt_get_u32(rec *r);
uint64_t ckpt_get_u64(rec *r);

/* The settings: what acm_domain_create and the setters take. */
typedef struct ckpt_settings {
    int32_t nx, ny, nz;
    double viscosity, max_speed;
    int32_t backend, device, options_precision;
    int64_t layout[8]; /* acm_layout_param 1..8 */
    int32_t storage;   /* ACM_LAYOUT_STORAGE (a field that was reserved, 0, before 1.7:
                          population storage) */
    acm_collision_options coll;
    int32_t face_type[ACM_FACE_COUNT];
    double face_u[ACM_FACE_COUNT][3];
    double body_force[3];
    int32_t has_force_field;
    int64_t threads, divergence_interval, ib_iterations;
} ckpt_settings;

void ckpt_settings_put(rec *r, const ckpt_settings *s);
void ckpt_settings_get(rec *r, ckpt_settings *s);

/* The counters: the handle's state and the backend's previous-step sums. */
void ckpt_counters_put(rec *r, const acm_snapshot *snap);
void ckpt_counters_get(rec *r, acm_snapshot *snap, int32_t *diverged, int32_t *form,
                       int32_t *prev_backend);

/* A solid's fixed part; its arrays follow in the section. */
typedef struct ckpt_solid {
    uint64_t count, mnv, mnt;
    int32_t has_mass, has_normal, moved;
    double alpha, area, spacing, inset;
} ckpt_solid;

void ckpt_solid_head_put(rec *r, const acm_solid *s, const acm_solid_copy *c);
void ckpt_solid_head_get(rec *r, ckpt_solid *h, acm_solid_copy *c);

/* A smoke's fixed part: its options, counters and number of emitters. */
typedef struct ckpt_smoke {
    uint64_t capacity, seed;
    acm_smoke_counts counts;
    int32_t nemitters;
} ckpt_smoke;

void ckpt_smoke_head_put(rec *r, const acm_smoke *s);
void ckpt_smoke_head_get(rec *r, ckpt_smoke *h);

/* An emitter's fixed part (its points follow): the acm_emitter's numbers, its
 * solid's number (-1: none) and how far it has got. */
void ckpt_emitter_put(rec *r, const smoke_emitter *se, int32_t solid);
void ckpt_emitter_get(rec *r, smoke_emitter *se, int32_t *solid);

/* Sizes of the fixed records, from the writers themselves. */
size_t ckpt_settings_size(void);
size_t ckpt_counters_size(void);
size_t ckpt_solid_head_size(void);
size_t ckpt_smoke_head_size(void);
size_t ckpt_emitter_size(void);

/* ---- the section table ---------------------------------------------------------------- */

void ckpt_entry_put(rec *r, const ckpt_entry *e);

/* The table's CRC covers the header's first 36 bytes and every entry. */
uint32_t ckpt_table_crc(const rec *head, const ckpt_entry *t, uint32_t n);

ACM_END_DECLS

#endif /* ACMLBM_CHECKPOINT_FORMAT_H */
