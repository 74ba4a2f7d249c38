/*
 * libacmlbm -- D3Q27 ACM-MRT lattice Boltzmann solver
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file acm_mesh.h
 * @defgroup mesh Triangle meshes
 * @{
 *
 * An ::acm_mesh is an immutable triangle mesh: the surface of a solid
 * (acm_solid_create()). Create it from caller arrays (acm_mesh_create()), or
 * read it from an STL (ASCII or binary) or Wavefront OBJ file or buffer
 * (acm_mesh_load(), acm_mesh_load_memory()). The readers are our own small C
 * code; they treat every input as hostile: a truncated or malformed file, an
 * absurd element count, a NaN or infinite coordinate, an out-of-range,
 * negative or zero OBJ index, or a mesh with no usable triangle gives a
 * specific ::acm_status and a message, never a crash or a huge allocation.
 * acm_mesh_load() reads regular files only: a directory, a FIFO, a device or
 * a socket is refused before anything is read, without blocking, and no more
 * is read than the size the file had when it was opened.
 *
 * ### What a mesh holds
 * Vertices (3 doubles each) and triangles (3 vertex indices each, counter-
 * clockwise seen from outside for a closed surface). OBJ polygons are split
 * into triangle fans; STL facets are welded at exactly equal vertices.
 * Degenerate triangles (repeated vertex indices, or an area of at most 1e-12
 * times the squared diagonal of the bounding box) are dropped and counted in
 * ::acm_mesh_info::degenerate_triangles; a mesh that keeps none is refused.
 * Vertices that no kept triangle uses are dropped too; the others keep their
 * order. Units are the caller's: acm_solid_options::scale converts them to
 * lattice cells. The text formats are read with strtod(), so numbers use a
 * '.' as long as the program keeps the C locale for LC_NUMERIC.
 *
 * ### Creation errors
 * A failed creation has no handle to carry the message: it is written to
 * acm_mesh_options::error_buffer when one is given.
 *
 * ### Thread-safety
 * A mesh is never modified after creation: any number of threads may read it
 * (including several acm_solid_create() calls) at the same time.
 */
#ifndef ACMLBM_ACM_MESH_H
#define ACMLBM_ACM_MESH_H

#include "acm_common.h" /* ACM_API, acm_status */

ACM_BEGIN_DECLS

/** Opaque, immutable triangle mesh. */
typedef struct acm_mesh acm_mesh;

/** File formats of acm_mesh_load(). */
typedef enum acm_mesh_format {
    ACM_MESH_FORMAT_AUTO = 0, /**< from the contents: binary STL (size matches its count),
                                   ASCII STL ("solid", then "facet" or "endsolid" on the
                                   next non-blank line), else OBJ */
    ACM_MESH_FORMAT_STL = 1,  /**< STL, binary or ASCII (told apart by the contents) */
    ACM_MESH_FORMAT_OBJ = 2   /**< Wavefront OBJ: v and f records (others are skipped) */
} acm_mesh_format;

/**
 * Options of the mesh creators. Initialise with ::ACM_MESH_OPTIONS_INIT or
 * acm_mesh_options_init(). NULL options mean the defaults.
 */
typedef struct acm_mesh_options {
    uint32_t version;         /**< ::ACM_MESH_OPTIONS_VERSION */
    acm_mesh_format format;   /**< loaders: the file format (default AUTO) */
    uint64_t max_triangles;   /**< refuse inputs with more triangles (after fan splitting);
                                   0 = default 2^26 (67 million) */
    char *error_buffer;       /**< optional: receives the message if creation fails */
    size_t error_buffer_size; /**< size of error_buffer in bytes */
} acm_mesh_options;

/** Current version of ::acm_mesh_options. */
#define ACM_MESH_OPTIONS_VERSION 1

/** Static initialiser with the defaults. */
#define ACM_MESH_OPTIONS_INIT { ACM_MESH_OPTIONS_VERSION, ACM_MESH_FORMAT_AUTO, 0, NULL, 0 }

/**
 * Initialise options of a given version with the defaults.
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION
 * @since 1.1
 */
ACM_API acm_status acm_mesh_options_init(acm_mesh_options *opts, uint32_t version);

/**
 * Create a mesh from caller arrays (copied).
 *
 * @param[out] out         receives the mesh on success
 * @param vertices        3 * vertex_count coordinates (x, y, z per vertex)
 * @param vertex_count    number of vertices, >= 3
 * @param triangles       3 * triangle_count vertex indices (0-based)
 * @param triangle_count  number of triangles, >= 1
 * @param opts            options, or NULL for the defaults
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_BAD_VERSION;
 *         ::ACM_ERR_OUT_OF_RANGE (a non-finite coordinate, an index >= vertex_count,
 *         too few vertices or triangles, coordinates so large that the area,
 *         volume or inertia overflows a double, or so small that the area, or the
 *         volume of a closed mesh, underflows to 0);
 *         ::ACM_ERR_INVALID_ARG (every triangle degenerate; error_buffer NULL with a
 *         non-zero error_buffer_size); ::ACM_ERR_LIMIT (more than max_triangles,
 *         more than 2^32 - 2 vertices); ::ACM_ERR_NO_MEMORY
 * @since 1.1
 */
ACM_API acm_status acm_mesh_create(acm_mesh **out, const double *vertices, size_t vertex_count,
                                   const uint32_t *triangles, size_t triangle_count,
                                   const acm_mesh_options *opts);

/**
 * Read a mesh file.
 *
 * @param[out] out  receives the mesh on success
 * @param path      file name
 * @param opts      options (format, limit, error buffer), or NULL
 * @return ::ACM_OK; ::ACM_ERR_NULL_POINTER; ::ACM_ERR_BAD_VERSION; ::ACM_ERR_BAD_ENUM;
 *         ::ACM_ERR_IO (cannot open or read the file, or it is not a regular file:
 *         the message names the path and what it is, "a FIFO", "a directory", ...);
 *         ::ACM_ERR_BAD_FORMAT (malformed, truncated, a NaN/inf coordinate, a bad OBJ
 *         index, no usable triangle, coordinates whose area or volume leaves the
 *         range of a double; the message gives the line or byte offset); ::ACM_ERR_LIMIT (more
 *         triangles than max_triangles, or a file larger than 1 MiB + 1 KiB per
 *         allowed triangle); ::ACM_ERR_INVALID_ARG (error_buffer NULL with a
 *         non-zero size); ::ACM_ERR_NO_MEMORY
 * @since 1.1
 */
ACM_API acm_status acm_mesh_load(acm_mesh **out, const char *path, const acm_mesh_options *opts);

/**
 * Read a mesh from a buffer holding the contents of a mesh file (same rules
 * and statuses as acm_mesh_load(), without ::ACM_ERR_IO and the file-size
 * bound).
 *
 * @param[out] out  receives the mesh on success
 * @param data      the file contents (need not be NUL-terminated)
 * @param size      bytes in data
 * @param opts      options, or NULL
 * @since 1.1
 */
ACM_API acm_status acm_mesh_load_memory(acm_mesh **out, const void *data, size_t size,
                                        const acm_mesh_options *opts);

/** Destroy a mesh. NULL is a harmless no-op. Solids made from it are not affected. @since 1.1 */
ACM_API void acm_mesh_destroy(acm_mesh *mesh);

/** Geometry of a mesh; see acm_mesh_get_info(). */
typedef struct acm_mesh_info {
    uint32_t version;              /**< set by the caller: ::ACM_MESH_INFO_VERSION */
    uint64_t vertex_count;         /**< vertices kept */
    uint64_t triangle_count;       /**< triangles kept */
    uint64_t degenerate_triangles; /**< triangles dropped at creation */
    double bbox_min[3];            /**< axis-aligned bounding box */
    double bbox_max[3];
    double area;                   /**< total surface area */
    double volume;                 /**< enclosed volume by the divergence theorem (positive for
                                        outward-facing triangles; meaningful when closed) */
    double centroid[3];            /**< centre of the enclosed volume when closed and volume > 0,
                                        else the area-weighted centre of the surface */
    double inertia[6];             /**< inertia tensor of the enclosed volume at unit density about
                                        the centroid: xx, yy, zz, xy, xz, yz, the off-diagonal
                                        entries being the tensor's (I_xy = -integral of x y dV);
                                        0 unless closed with volume > 0 */
    int32_t closed;                /**< 1 when every edge is shared by exactly two triangles
                                        (vertices at equal positions count as one) */
} acm_mesh_info;

/** Current version of ::acm_mesh_info. */
#define ACM_MESH_INFO_VERSION 1

/**
 * Geometry of a mesh.
 * @param mesh     the mesh
 * @param[out] info receives the values; set info->version first
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BAD_VERSION
 * @since 1.1
 */
ACM_API acm_status acm_mesh_get_info(const acm_mesh *mesh, acm_mesh_info *info);

/**
 * Copy the vertices (3 per vertex) to a caller array.
 * @param mesh   the mesh
 * @param dst    3 * count doubles
 * @param count  must equal ::acm_mesh_info::vertex_count
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BUFFER_SIZE
 * @since 1.1
 */
ACM_API acm_status acm_mesh_get_vertices(const acm_mesh *mesh, double *dst, size_t count);

/**
 * Copy the triangles (3 vertex indices each) to a caller array.
 * @param mesh   the mesh
 * @param dst    3 * count indices
 * @param count  must equal ::acm_mesh_info::triangle_count
 * @return ::ACM_OK, ::ACM_ERR_NULL_POINTER, ::ACM_ERR_BUFFER_SIZE
 * @since 1.1
 */
ACM_API acm_status acm_mesh_get_triangles(const acm_mesh *mesh, uint32_t *dst, size_t count);

/**
 * Message of the last failed call on @p mesh, or "" if none (failed
 * creations write theirs to acm_mesh_options::error_buffer).
 * @since 1.1
 */
ACM_API const char *acm_mesh_last_error(const acm_mesh *mesh);

ACM_END_DECLS

/** @} */
#endif /* ACMLBM_ACM_MESH_H */
