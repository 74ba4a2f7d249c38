/*
 * libacmlbm -- D3Q27 ACM-MRT lattice Boltzmann solver
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file acm_tune.h
 * @defgroup tune Autotuning
 * @{
 *
 * The step time of a scene depends on the layout (CSoA group alpha, the
 * samples' block edge l, kernel structure, threads per block, spreading) in
 * ways no model predicts well for complex solids (paper Sec. 4.4, Fig. 8).
 * acm_domain_autotune() measures candidate layouts on the real scene and
 * returns the fastest; the caller applies it with acm_domain_set_layout().
 *
 * The search (docs/performance.md, "Autotuning"): the immersed-boundary
 * parameters are searched one at a time from the defaults (l, sample order,
 * spreading), then the fluid parameters with the best of them (alpha, block
 * size, kernel structure and, where allowed, streaming and precision), since
 * the two parts of a step cost separately; the best two of each are then
 * crossed and measured again with a longer window, together with the default
 * layout, so the result is never slower than the default as measured. A
 * candidate twice as slow as the best is cut after half its window.
 * ::ACM_TUNE_EXHAUSTIVE measures every combination instead, to check the
 * search.
 *
 * Thread-safety: one call at a time per domain, like every domain call. The
 * search holds the domain from start to end: another thread's calls on it
 * meanwhile are refused with ::ACM_ERR_BAD_STATE (acm_domain.h). The domain
 * holds a trial layout and state while the progress callback runs, so every
 * call the callback makes on it is refused too (@since 1.6; before, queries
 * saw and saves wrote the trial state, and steps were silently undone); a
 * destroy of the domain, a solid or a smoke there stops the search and is
 * carried out when acm_domain_autotune() returns ::ACM_ERR_CANCELLED
 * (docs/api.md, "Callbacks").
 */
#ifndef ACMLBM_ACM_TUNE_H
#define ACMLBM_ACM_TUNE_H

#include "acm_common.h" /* ACM_API, acm_status */
#include "acm_domain.h" /* acm_domain */
#include "acm_layout.h" /* acm_layout */

ACM_BEGIN_DECLS

/** Flags of acm_tune_options::flags. */
typedef enum acm_tune_flag {
    /** Measure every combination of the candidate values (minutes; to check
     *  the search). */
    ACM_TUNE_EXHAUSTIVE = 1u << 0,
    /** Candidates may use in-place streaming (half the population memory; a
     *  diverging step then keeps no copy of the state before it). */
    ACM_TUNE_STREAMING = 1u << 1,
    /** Candidates may store FP32 domains' populations in FP16 (CUDA only;
     *  changes the results at FP16 round-off). */
    ACM_TUNE_PRECISION = 1u << 2,
    /** Ignore a cached result: search, and store the new one. */
    ACM_TUNE_REFRESH = 1u << 3,
    /** Candidates may store moments instead of populations (::ACM_STORAGE_MOMENTS: a
     *  third of the memory; the model's high orders then relax at rate 1, which
     *  changes the results). @since 1.7 */
    ACM_TUNE_STORAGE = 1u << 4
} acm_tune_flag;

/** What the progress callback learns after each measured candidate. */
typedef struct acm_tune_progress {
    int32_t done;          /**< candidates measured so far */
    int32_t planned;       /**< candidates the search expects to measure (may change) */
    double elapsed_s;      /**< seconds since the call began */
    const char *stage;     /**< "fluid", "solids", "final" or "exhaustive" */
    const char *candidate; /**< layout text of the candidate just measured */
    double candidate_ms;   /**< its mean milliseconds per step (0 if it failed) */
    double best_ms;        /**< the best so far */
} acm_tune_progress;

/** Progress callback; return non-zero to cancel the search (the call then
 *  returns ::ACM_ERR_CANCELLED with the domain as it was). */
typedef int (*acm_tune_progress_fn)(const acm_tune_progress *progress, void *user_data);

/** Options of acm_domain_autotune(). */
typedef struct acm_tune_options {
    uint32_t version;         /**< ::ACM_TUNE_OPTIONS_VERSION */
    double time_budget_s;     /**< stop measuring new candidates after this many seconds
                                   (0: 60); the final round still runs */
    int64_t window_steps;     /**< steps per measurement (0: about 40 ms; with moving
                                   solids enough to cover their periodic re-sorts, up to
                                   1 s); the final round measures 3x as many. A candidate
                                   already twice as slow as the best after half its
                                   window is cut there */
    uint32_t flags;           /**< ::acm_tune_flag values, or-ed (other bits: ::ACM_ERR_BAD_ENUM) */
    const char *cache_path;   /**< a text file of tuned layouts (NULL: no cache). A hit
                                   skips the search; a search stores its result there
                                   (written to a temporary file and renamed); it must be a
                                   regular file (a FIFO or a directory: ::ACM_ERR_IO) */
    acm_tune_progress_fn progress; /**< called after each candidate, or NULL */
    void *user_data;          /**< passed to progress */
} acm_tune_options;

/** Current version of ::acm_tune_options. */
#define ACM_TUNE_OPTIONS_VERSION 1

/** Initialiser of an ::acm_tune_options with every default. */
#define ACM_TUNE_OPTIONS_INIT {ACM_TUNE_OPTIONS_VERSION, 0.0, 0, 0u, NULL, NULL, NULL}

/**
 * Fill @p opts with the defaults of options version @p version.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION
 * @since 1.3
 */
ACM_API acm_status acm_tune_options_init(acm_tune_options *opts, uint32_t version);

/** Opaque record of a search: every candidate measured. */
typedef struct acm_tune_report acm_tune_report;

/**
 * Find the fastest layout for the domain as it is now (grid, solids, their
 * motion, collision model), by measuring candidate layouts for a window of
 * steps each on the domain itself. The domain's state and layout are put
 * back exactly afterwards (bitwise: its populations, solids and step count
 * are as before the call), whatever happens, unless the device itself fails.
 *
 * A candidate that cannot be allocated, fails to launch or diverges is
 * discarded and reported; the search goes on. On the CPU backend the CSoA
 * group and the sample block are tuned; the GPU-only parameters are reported
 * as not applicable (acm_tune_summary::not_tuned).
 *
 * @param domain the domain (with its solids, faces and forces set up)
 * @param opts   options, or NULL for the defaults
 * @param[out] best receives the fastest layout (the cached one on a cache hit)
 * @param[out] report receives the record of the search, or NULL if not wanted;
 *               destroy it with acm_tune_report_destroy()
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_BAD_VERSION;
 *         ::ACM_ERR_OUT_OF_RANGE (a negative budget or window);
 *         ::ACM_ERR_BAD_STATE (the domain has diverged);
 *         ::ACM_ERR_BAD_FORMAT (the cache holds a corrupt entry for this scene:
 *         the message names file and line; ::ACM_TUNE_REFRESH replaces it);
 *         ::ACM_ERR_IO (the cache cannot be read or written, or is not a regular
 *         file: checked before the search); ::ACM_ERR_CANCELLED; device errors
 * @since 1.3
 */
ACM_API acm_status acm_domain_autotune(acm_domain *domain, const acm_tune_options *opts,
                                       acm_layout *best, acm_tune_report **report);

/** Search stages of acm_tune_entry::stage. */
typedef enum acm_tune_stage {
    ACM_TUNE_STAGE_FLUID = 1,      /**< fluid parameters, one at a time */
    ACM_TUNE_STAGE_SOLIDS = 2,     /**< immersed-boundary parameters */
    ACM_TUNE_STAGE_FINAL = 3,      /**< the finalists, longer window */
    ACM_TUNE_STAGE_EXHAUSTIVE = 4  /**< every combination */
} acm_tune_stage;

/** One measured candidate. */
typedef struct acm_tune_entry {
    uint32_t version;                   /**< set by the caller: ::ACM_TUNE_ENTRY_VERSION */
    char layout[ACM_LAYOUT_STRING_SIZE]; /**< the candidate, as acm_layout_to_string() writes it */
    acm_tune_stage stage;
    acm_status status;     /**< ::ACM_OK, or why the candidate was discarded */
    double ms_per_step;    /**< mean over the window (0 if discarded) */
    double mlups;          /**< million cell updates per second */
    int64_t steps;         /**< steps of the window */
    char message[160];     /**< why it was discarded, or "" */
} acm_tune_entry;

/** Current version of ::acm_tune_entry. */
#define ACM_TUNE_ENTRY_VERSION 1

/** What a search found. */
typedef struct acm_tune_summary {
    uint32_t version;       /**< set by the caller: ::ACM_TUNE_SUMMARY_VERSION */
    int32_t entries;        /**< candidates measured (0 on a cache hit) */
    int32_t best;           /**< entry of the chosen layout in the final round (-1: cache hit) */
    int32_t default_entry;  /**< entry of the default layout in the final round (-1: none) */
    int32_t worst;          /**< slowest measured entry (-1: none) */
    int32_t failed;         /**< candidates discarded */
    double seconds;         /**< wall time of the call */
    int32_t cache_hit;      /**< 1: the layout came from the cache, nothing was measured */
    int32_t budget_reached; /**< 1: the time budget cut the search short */
    char best_layout[ACM_LAYOUT_STRING_SIZE]; /**< the chosen layout */
    char not_tuned[128];    /**< parameters not tuned on this backend or scene, or "" */
} acm_tune_summary;

/** Current version of ::acm_tune_summary. */
#define ACM_TUNE_SUMMARY_VERSION 1

/**
 * The summary of a search.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION
 * @since 1.3
 */
ACM_API acm_status acm_tune_report_summary(const acm_tune_report *report,
                                           acm_tune_summary *summary);

/**
 * Entry @p index (0 .. entries - 1) of a search, in the order measured.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION, ::ACM_ERR_OUT_OF_RANGE
 * @since 1.3
 */
ACM_API acm_status acm_tune_report_entry(const acm_tune_report *report, int32_t index,
                                         acm_tune_entry *entry);

/**
 * Write the entries as CSV (a header line, then one line per candidate with
 * its stage, every layout parameter as a column, status, ms per step, MLUPS,
 * steps and whether it was chosen), for a spreadsheet or a plot.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_IO
 * @since 1.3
 */
ACM_API acm_status acm_tune_report_write_csv(const acm_tune_report *report, const char *path);

/** Destroy a report. NULL is a harmless no-op. @since 1.3 */
ACM_API void acm_tune_report_destroy(acm_tune_report *report);

ACM_END_DECLS

/** @} */
#endif /* ACMLBM_ACM_TUNE_H */
