/*
 * libacmlbm tests -- .vdb files read back by OpenVDB (openvdb::io::File):
 * grid names, metadata, transforms and every active voxel, for test-vdb.c.
 * No exception leaves this file. SPDX-License-Identifier: Apache-2.0
 */
#include "vdb-read.h"

#include <cstdio>    // snprintf
#include <exception> // std::exception
#include <string>    // std::string

#include <openvdb/io/File.h>
#include <openvdb/openvdb.h>

namespace {

void copy(char *dst, size_t size, const std::string &s)
{
    std::snprintf(dst, size, "%s", s.c_str());
}

template <typename F> int guarded(char *msg, size_t size, F &&f) noexcept
{
    try {
        f();
        return 0;
    } catch (const std::exception &e) {
        std::snprintf(msg, size, "OpenVDB: %s", e.what());
    } catch (...) {
        std::snprintf(msg, size, "OpenVDB: unknown exception");
    }
    return -1;
}

void to3(double *dst, const openvdb::Vec3d &v)
{
    for (int a = 0; a < 3; ++a)
        dst[a] = v[a];
}

float component(float v, int) { return v; }
float component(const openvdb::Vec3s &v, int a) { return v[a]; }

// Every active voxel (tiles voxel by voxel) into the dense arrays.
template <typename GridT>
void scatter(const GridT &grid, const int32_t n[3], int comps, float *values,
             unsigned char *active, vdb_test_grid *info)
{
    const openvdb::CoordBBox box(openvdb::Coord(0, 0, 0), openvdb::Coord(n[0] - 1, n[1] - 1, n[2] - 1));
    for (auto it = grid.cbeginValueOn(); it; ++it) {
        const openvdb::CoordBBox tile = it.getBoundingBox();
        for (auto c = tile.begin(); c; ++c) {
            ++info->active;
            if (!box.isInside(*c)) {
                ++info->outside;
                continue;
            }
            const size_t at = (size_t)(*c)[0] + (size_t)n[0] * ((size_t)(*c)[1] + (size_t)n[1] * (size_t)(*c)[2]);
            for (int a = 0; a < comps; ++a)
                values[(size_t)comps * at + (size_t)a] = component(*it, a);
            active[at] = 1;
        }
    }
    for (int a = 0; a < comps; ++a)
        info->background[a] = component(grid.background(), a);
}

void describe(const openvdb::GridBase &g, vdb_test_grid *info)
{
    copy(info->value_type, sizeof info->value_type, g.valueType());
    copy(info->grid_class, sizeof info->grid_class, openvdb::GridBase::gridClassToString(g.getGridClass()));
    copy(info->vector_type, sizeof info->vector_type, openvdb::GridBase::vecTypeToString(g.getVectorType()));
    copy(info->creator, sizeof info->creator, g.getCreator());
    const openvdb::math::Transform &xf = g.transform();
    info->linear = xf.isLinear() && xf.hasUniformScale();
    to3(info->voxel_size, xf.voxelSize());
    to3(info->origin, xf.indexToWorld(openvdb::Vec3d(0.0, 0.0, 0.0)));
    to3(info->centre, xf.indexToWorld(openvdb::Vec3d(1.0, 2.0, 3.0)));
}

} // namespace

extern "C" int vdb_test_names(const char *path, char *names, size_t size, char *creator,
                              size_t creator_size, char *msg, size_t msg_size)
{
    return guarded(msg, msg_size, [&] {
        openvdb::initialize();
        openvdb::io::File file(path);
        file.open(false);
        std::string all;
        for (auto it = file.beginName(); it != file.endName(); ++it)
            all += (all.empty() ? "" : ",") + it.gridName();
        copy(names, size, all);
        const openvdb::MetaMap::Ptr meta = file.getMetadata();
        copy(creator, creator_size, meta->metaValue<std::string>("creator"));
        file.close();
    });
}

extern "C" int vdb_test_read(const char *path, const char *name, const int32_t n[3], int comps,
                             float *values, unsigned char *active, vdb_test_grid *info, char *msg,
                             size_t msg_size)
{
    return guarded(msg, msg_size, [&] {
        openvdb::initialize();
        openvdb::io::File file(path);
        file.open(false);
        const openvdb::GridBase::Ptr g = file.readGrid(name);
        file.close();
        *info = vdb_test_grid{};
        describe(*g, info);
        if (const auto f = openvdb::gridPtrCast<openvdb::FloatGrid>(g))
            scatter(*f, n, comps, values, active, info);
        else if (const auto v = openvdb::gridPtrCast<openvdb::Vec3SGrid>(g))
            scatter(*v, n, comps, values, active, info);
    });
}
