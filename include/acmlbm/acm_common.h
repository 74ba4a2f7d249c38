/*
 * libacmlbm -- D3Q27 ACM-MRT lattice Boltzmann solver
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file acm_common.h
 * @defgroup common Common definitions
 * @{
 *
 * Export macro, status codes, and the enumerations shared by every handle.
 *
 * Conventions used throughout the API (see docs/conventions.md):
 * - Every call that can fail returns an ::acm_status; ::ACM_OK is 0.
 * - Handles are opaque and created and destroyed only by the library.
 *   Destroy functions accept NULL.
 * - Output parameters are written only on success.
 * - A failing call on a handle leaves a human-readable message on that
 *   handle (for example acm_domain_last_error()).
 * - Numbers are in lattice units (dx = dt = 1) unless stated otherwise.
 */
#ifndef ACMLBM_ACM_COMMON_H
#define ACMLBM_ACM_COMMON_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t, int64_t, uint32_t */

#include "acm_version.h" /* ACM_VERSION_*, ACM_HAVE_CUDA */

/** @cond INTERNAL */
#if defined(_WIN32) || defined(__CYGWIN__)
#  if defined(ACM_BUILDING)
#    define ACM_API __declspec(dllexport)
#  else
#    define ACM_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define ACM_API __attribute__((visibility("default")))
#else
#  define ACM_API
#endif

#ifdef __cplusplus
#  define ACM_BEGIN_DECLS extern "C" {
#  define ACM_END_DECLS }
#else
#  define ACM_BEGIN_DECLS
#  define ACM_END_DECLS
#endif
/** @endcond */

ACM_BEGIN_DECLS

/**
 * Status codes, with pinned values grouped by range:
 * 1xx resources and devices, 2xx caller errors, 3xx build or backend
 * capability, 4xx simulation state, 9xx internal errors.
 *
 * A value, once released, never changes meaning. New codes are appended
 * inside their range.
 */
#define ACM_STATUS_MAP(X)                                                                    \
    X(OK, 0, "success")                                                                      \
    X(ERR_NO_MEMORY, 101, "out of host memory")                                              \
    X(ERR_DEVICE, 102, "CUDA runtime or driver failure")                                     \
    X(ERR_NO_DEVICE, 103, "no usable CUDA device")                                           \
    X(ERR_DEVICE_MEMORY, 104, "out of device memory")                                        \
    X(ERR_IO, 105, "a file could not be opened or read")                                     \
    X(ERR_INVALID_ARG, 201, "invalid or inconsistent arguments")                             \
    X(ERR_BAD_STATE, 202, "call not valid in the object's current state")                    \
    X(ERR_BAD_VERSION, 203, "unknown options-struct version")                                \
    X(ERR_NULL_POINTER, 204, "a required pointer argument is NULL")                          \
    X(ERR_OUT_OF_RANGE, 205, "a numeric argument is outside its admissible range")           \
    X(ERR_BAD_ENUM, 206, "unknown enumeration value")                                        \
    X(ERR_BUFFER_SIZE, 207, "buffer size does not match the field")                          \
    X(ERR_BAD_FORMAT, 208, "malformed, truncated or inconsistent input data")                \
    X(ERR_LIMIT, 209, "a size limit was exceeded")                                           \
    X(ERR_CANCELLED, 210, "cancelled by the caller")                                         \
    X(ERR_UNSUPPORTED, 301, "not supported by this backend")                                 \
    X(ERR_NOT_BUILT, 302, "feature not compiled into this build")                            \
    X(ERR_DIVERGED, 401, "the simulation diverged (NaN or runaway velocity)")                \
    X(ERR_INTERNAL, 901, "internal error (please report)")

/** Result of every fallible call. ::ACM_OK (0) means success. */
typedef enum acm_status {
/** @cond INTERNAL */
#define ACM__STATUS_ENUM(name, value, text) ACM_##name = value,
    ACM_STATUS_MAP(ACM__STATUS_ENUM)
#undef ACM__STATUS_ENUM
    /** @endcond */
    ACM__STATUS_FORCE_INT = 0x7fffffff /**< keeps the enum int-sized */
} acm_status;

/**
 * Short, static English description of a status code.
 *
 * @param status any value, including unknown ones
 * @return a static string, never NULL ("unknown status" for unknown codes)
 * @note Thread-safe.
 * @since 1.0
 */
ACM_API const char *acm_status_string(acm_status status);

/**
 * Compute backends. ::ACM_BACKEND_AUTO picks CUDA when the library was
 * built with it and a device is present, otherwise the CPU. The environment
 * variable `ACMLBM_BACKEND` (`cpu` or `cuda`) overrides `AUTO`.
 */
typedef enum acm_backend {
    ACM_BACKEND_AUTO = 0, /**< CUDA if usable, else CPU */
    ACM_BACKEND_CPU = 1,  /**< reference backend, OpenMP-parallel */
    ACM_BACKEND_CUDA = 2  /**< NVIDIA GPU backend */
} acm_backend;

/**
 * Storage precision of the particle populations. Populations are stored
 * shifted by their rest weights (f - w_i) so that FP32 keeps low-Mach
 * precision. Arithmetic is FP32 for FP32 and FP16 storage, FP64 for FP64.
 */
typedef enum acm_precision {
    ACM_PRECISION_DEFAULT = 0, /**< FP32 */
    ACM_PRECISION_FP32 = 1,    /**< 4 bytes per population */
    ACM_PRECISION_FP64 = 2,    /**< 8 bytes per population; reference tests */
    ACM_PRECISION_FP16 = 3     /**< 2 bytes per population (CUDA backend only) */
} acm_precision;

/**
 * Collision models, all on the D3Q27 lattice (docs/physics.md).
 */
typedef enum acm_collision {
    ACM_COLLISION_DEFAULT = 0,    /**< the recommended ACM mode: ::ACM_COLLISION_ACM_LI2018 */
    ACM_COLLISION_BGK = 1,        /**< single relaxation time (Guo-type forcing) */
    ACM_COLLISION_RM_MRT = 2,     /**< raw-moment MRT (comparison model) */
    ACM_COLLISION_CM_MRT = 3,     /**< central-moment MRT, De Rosis 2017 basis */
    ACM_COLLISION_ACM_LI2018 = 4, /**< adaptive central moments, empirical rule */
    ACM_COLLISION_ACM_LI2020 = 5  /**< adaptive central moments, regression rule */
} acm_collision;

/** The six faces of the box-shaped domain. */
typedef enum acm_face {
    ACM_FACE_X_MIN = 0, /**< x = 0 */
    ACM_FACE_X_MAX = 1, /**< x = nx - 1 */
    ACM_FACE_Y_MIN = 2, /**< y = 0 */
    ACM_FACE_Y_MAX = 3, /**< y = ny - 1 */
    ACM_FACE_Z_MIN = 4, /**< z = 0 */
    ACM_FACE_Z_MAX = 5  /**< z = nz - 1 */
} acm_face;

/** Number of faces of a domain. */
#define ACM_FACE_COUNT 6

/**
 * Boundary condition of one face (docs/physics.md, "Domain faces").
 */
typedef enum acm_boundary {
    /** Wrap around to the opposite face; both faces of an axis must be periodic. */
    ACM_BOUNDARY_PERIODIC = 0,
    /** Half-way bounce-back wall half a cell outside the face. A velocity
     *  tangential to the face makes it a moving wall. */
    ACM_BOUNDARY_WALL = 1,
    /** Velocity inlet: the face layer holds equilibrium cells with the
     *  prescribed velocity and the density of the adjacent fluid cell. */
    ACM_BOUNDARY_INLET = 2,
    /** Outflow: the face layer holds equilibrium cells with density 1 and the
     *  velocity of the adjacent fluid cell. */
    ACM_BOUNDARY_OUTLET = 3,
    /** Free-slip (specular) wall half a cell outside the face: no flow through it,
     *  no shear along it; a symmetry plane. Takes no velocity. @since 1.9 */
    ACM_BOUNDARY_SLIP = 4
} acm_boundary;

/** Element type of caller buffers exchanged with the library. */
typedef enum acm_dtype {
    ACM_DTYPE_FLOAT32 = 1, /**< `float` */
    ACM_DTYPE_FLOAT64 = 2  /**< `double` */
} acm_dtype;

/**
 * Whether a backend was compiled in and can run here (for CUDA: a device is
 * present).
 *
 * @param backend ::ACM_BACKEND_CPU or ::ACM_BACKEND_CUDA (AUTO answers 1)
 * @return 1 if usable, 0 if not or if @p backend is unknown
 * @note Thread-safe. May initialise the CUDA runtime.
 * @since 1.0
 */
ACM_API int acm_backend_available(acm_backend backend);

/**
 * Runtime library version, ::ACM_VERSION_NUMBER of the library actually
 * loaded (compare with the macro of the headers you compiled against).
 * @since 1.0
 */
ACM_API unsigned acm_version_number(void);

/** Runtime library version as "MAJOR.MINOR.PATCH". Never NULL. @since 1.0 */
ACM_API const char *acm_version_string(void);

ACM_END_DECLS

/** @} */
#endif /* ACMLBM_ACM_COMMON_H */
