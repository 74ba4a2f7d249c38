/*
 * libacmlbm -- D3Q27 ACM-MRT lattice Boltzmann solver
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file acm_layout.h
 * @defgroup layout Memory layout
 * @{
 *
 * An ::acm_layout holds the memory-layout parameters of a domain: the CSoA
 * group size alpha (paper Eq. 6) and, as they are added, the other layout and
 * kernel choices. It is a plain parameter set: create one, set what you care
 * about, pass it in acm_domain_options::layout, destroy it (the domain keeps a
 * copy). Parameters left at 0 are chosen by the backend.
 *
 * CSoA stores component i of cell k at
 * `27 * alpha * floor(k / alpha) + alpha * i + k % alpha`, with k the linear
 * cell index (x fastest). alpha = 1 is array-of-structures; alpha >= the
 * number of cells is structure-of-arrays.
 *
 * Thread-safety: a layout may be read by several threads (e.g. passed to
 * several acm_domain_create() calls) while no thread modifies it.
 */
#ifndef ACMLBM_ACM_LAYOUT_H
#define ACMLBM_ACM_LAYOUT_H

#include "acm_common.h" /* ACM_API, acm_status */

ACM_BEGIN_DECLS

/** Opaque set of layout parameters. */
typedef struct acm_layout acm_layout;

/** Layout parameter keys; the numbers are stable. */
typedef enum acm_layout_param {
    /** CSoA group size alpha: a power of two in [1, 2^30]; 0 = backend default
     *  (groups of up to 1024 cells; see docs/performance.md). A group larger
     *  than both 2^14 cells and the grid is used as the larger of 2^14 and the
     *  smallest power of two that holds the grid (@since 1.6; before, storage
     *  was padded to the whole group: 3.6 GB for 2^24 on one cell). */
    ACM_LAYOUT_CSOA_GROUP = 1,
    /** GPU kernel structure, an ::acm_kernel; 0 = the fastest measured
     *  (::ACM_KERNEL_FUSED). The CPU backend has one code path and ignores it. */
    ACM_LAYOUT_KERNEL = 2,
    /** GPU threads per block: a multiple of 32 in [32, 256]; 0 = default (128). */
    ACM_LAYOUT_BLOCK_SIZE = 3,
    /** Edge l of the blocks of the Morton-block order of immersed-boundary samples
     *  (paper Sec. 4.1.2), cells, in [1, 64]; 0 = default (2). */
    ACM_LAYOUT_SAMPLE_BLOCK = 4,
    /** Order of the samples in memory, an ::acm_sample_order; 0 = default
     *  (::ACM_SAMPLE_ORDER_MORTON_BLOCK). */
    ACM_LAYOUT_SAMPLE_ORDER = 5,
    /** How penalty forces reach the grid, an ::acm_ib_spread; 0 = default
     *  (::ACM_IB_SPREAD_SCATTER). */
    ACM_LAYOUT_IB_SPREAD = 6,
    /** How populations stream, an ::acm_streaming; 0 = default
     *  (::ACM_STREAMING_TWO_ARRAYS). @since 1.2 */
    ACM_LAYOUT_STREAMING = 7,
    /** Storage precision of the populations, an ::acm_precision; 0 = the one of
     *  acm_domain_options::precision. A layout that sets it overrides the option
     *  (FP16: the CUDA backend only, but for moment storage). @since 1.3 */
    ACM_LAYOUT_PRECISION = 8,
    /** What a cell stores, an ::acm_storage; 0 = default
     *  (::ACM_STORAGE_POPULATIONS). @since 1.7 */
    ACM_LAYOUT_STORAGE = 9
} acm_layout_param;

/** What each cell stores between steps (docs/physics.md, "Moment storage"). */
typedef enum acm_storage {
    ACM_STORAGE_DEFAULT = 0,     /**< ::ACM_STORAGE_POPULATIONS */
    ACM_STORAGE_POPULATIONS = 1, /**< the 27 post-collision populations: every collision
                                      model exactly as written */
    ACM_STORAGE_MOMENTS = 2      /**< 10 moments (density, velocity, the second central
                                      moments' non-equilibrium part) from which each step
                                      rebuilds the populations it streams, high orders
                                      regularised: a third of the memory. FP64, FP32 and
                                      FP16 (the CPU emulates FP16's rounding); two arrays
                                      (in-place streaming is refused). The ACM adaptive
                                      rates have no high orders to act on: every model's
                                      orders 3-6 relax at rate 1 */
} acm_storage;

/** Population storage and streaming (docs/performance.md, "In-place streaming"). Both give
 *  the same physics to round-off. */
typedef enum acm_streaming {
    ACM_STREAMING_DEFAULT = 0,    /**< ::ACM_STREAMING_TWO_ARRAYS */
    ACM_STREAMING_TWO_ARRAYS = 1, /**< pull from one population array into another, swap */
    ACM_STREAMING_IN_PLACE = 2    /**< one population array, the AA pattern: even steps
                                       collide in the cell and store each population in its
                                       opposite slot, odd steps read from and write to the
                                       neighbours. Half the population memory; a step that
                                       diverges cannot keep the state before it. CUDA: the
                                       fused kernel only */
} acm_streaming;

/** Orders of the immersed-boundary samples in memory. */
typedef enum acm_sample_order {
    ACM_SAMPLE_ORDER_DEFAULT = 0,      /**< ::ACM_SAMPLE_ORDER_MORTON_BLOCK */
    ACM_SAMPLE_ORDER_MORTON_BLOCK = 1, /**< by block of l^3 cells (x-y-z order), then by Morton
                                            code inside the block; moving solids are re-sorted
                                            when a sample may have drifted by l cells */
    ACM_SAMPLE_ORDER_AS_SAMPLED = 2    /**< the order of sampling (or of the caller's array) */
} acm_sample_order;

/** Spreading of the immersed-boundary forces (paper Sec. 4.2). Both give the
 *  same forces up to the order of floating-point additions. */
typedef enum acm_ib_spread {
    ACM_IB_SPREAD_DEFAULT = 0, /**< ::ACM_IB_SPREAD_SCATTER */
    ACM_IB_SPREAD_SCATTER = 1, /**< one thread per sample adds to its 8 cells (atomics on the GPU) */
    ACM_IB_SPREAD_GATHER = 2   /**< one thread per cell of a solid's bounding box sums the samples
                                    around it (the paper's baseline; for comparison) */
} acm_ib_spread;

/**
 * GPU kernel structures (docs/performance.md). All give the same physics
 * to FP32 round-off; they differ in speed and memory.
 */
typedef enum acm_kernel {
    ACM_KERNEL_DEFAULT = 0,  /**< ::ACM_KERNEL_FUSED */
    ACM_KERNEL_FUSED = 1,    /**< one pull-stream-collide pass per step, walls folded in */
    ACM_KERNEL_SPLIT = 2,    /**< the paper's structure: stream, six per-face wall kernels,
                                  macroscopic fields, moments, collision split into two
                                  launches (outputs 0-13 and 14-26); 4x the memory */
    ACM_KERNEL_BASELINE = 3  /**< the paper's baseline (its Sec. 3.3): array-of-structures
                                  storage (alpha forced to 1), separate stream, macroscopic
                                  and collision kernels, no optimisations */
} acm_kernel;

/**
 * Create a layout with every parameter at 0 (backend default).
 *
 * @param[out] out receives the new layout on success
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER if @p out is NULL,
 *         ::ACM_ERR_NO_MEMORY
 * @since 1.0
 */
ACM_API acm_status acm_layout_create(acm_layout **out);

/**
 * Destroy a layout. NULL is a harmless no-op. Domains created with it are not
 * affected.
 * @since 1.0
 */
ACM_API void acm_layout_destroy(acm_layout *layout);

/**
 * Set one parameter.
 *
 * @param layout the layout
 * @param param  parameter key
 * @param value  new value; 0 restores the backend default
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_ENUM for an unknown
 *         key, ::ACM_ERR_OUT_OF_RANGE for a value outside
 *         acm_layout_param_bounds() or not a power of two
 * @since 1.0
 */
ACM_API acm_status acm_layout_set(acm_layout *layout, acm_layout_param param, int64_t value);

/**
 * Read one parameter.
 *
 * @param layout    the layout
 * @param param     parameter key
 * @param[out] value receives the value (0 = backend default)
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_ENUM
 * @since 1.0
 */
ACM_API acm_status acm_layout_get(const acm_layout *layout, acm_layout_param param,
                                  int64_t *value);

/**
 * Admissible range of a parameter (0, "backend default", is always accepted
 * as well).
 *
 * @param param     parameter key
 * @param[out] min  smallest explicit value
 * @param[out] max  largest explicit value
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_ENUM
 * @since 1.0
 */
ACM_API acm_status acm_layout_param_bounds(acm_layout_param param, int64_t *min, int64_t *max);

/** Size of a buffer that holds any acm_layout_to_string() text, terminator included. */
#define ACM_LAYOUT_STRING_SIZE 256

/**
 * The layout as one line of text, every parameter by name, for logs, caches
 * and configuration files. Version 1 reads
 *
 *     acm-layout 1 csoa_group=1024 kernel=fused block_size=default sample_block=2
 *     sample_order=morton_block ib_spread=scatter streaming=in_place precision=default storage=default
 *
 * (one line): the header `acm-layout 1`, then `key=value` for every key in key
 * order; enumerations by their name in lower case without the prefix
 * (`two_arrays`, `as_sampled`), numbers in decimal, 0 as `default`.
 *
 * @param layout the layout
 * @param[out] buf receives the text, NUL-terminated
 * @param size   bytes at @p buf (::ACM_LAYOUT_STRING_SIZE always suffices)
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BUFFER_SIZE if the text
 *         does not fit (@p buf then holds "")
 * @since 1.3
 */
ACM_API acm_status acm_layout_to_string(const acm_layout *layout, char *buf, size_t size);

/**
 * Set every parameter of a layout from a text of acm_layout_to_string().
 * Keys may come in any order, separated by any white space; a key that is
 * absent is set to 0 (default), so the text describes the whole layout.
 * Every value is checked as acm_layout_set() checks it. On any error the
 * layout is left unchanged and acm_layout_last_error() says what and where.
 *
 * @param layout the layout
 * @param text   NUL-terminated text
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_FORMAT (no header,
 *         a token without `=`, a key given twice, a number that is not one),
 *         ::ACM_ERR_BAD_VERSION (a format version other than 1),
 *         ::ACM_ERR_BAD_ENUM (an unknown key or enumeration name),
 *         ::ACM_ERR_OUT_OF_RANGE (a value acm_layout_set() refuses)
 * @since 1.3
 */
ACM_API acm_status acm_layout_from_string(acm_layout *layout, const char *text);

/**
 * Message describing the last failed call on @p layout, or "" if none.
 * The string lives until the next call on the layout or its destruction.
 * @since 1.0
 */
ACM_API const char *acm_layout_last_error(const acm_layout *layout);

ACM_END_DECLS

/** @} */
#endif /* ACMLBM_ACM_LAYOUT_H */
