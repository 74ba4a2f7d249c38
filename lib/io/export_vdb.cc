/*
 * libacmlbm -- OpenVDB files (acm_export.h), the C++17 side, built as the
 * module acmlbm-vdb.so that lib/io/vdb.c loads (export_vdb.h says why): grids
 * built from dense FP32 arrays and written by OpenVDB's archive writer into a
 * file descriptor that lib/io/vdb.c opened (and syncs and renames). The
 * functions of the table catch every exception here: none crosses into C.
 * SPDX-License-Identifier: Apache-2.0
 */
#include "export_vdb.h"

#include "acmlbm/acm_version.h" // ACM_VERSION_STRING

#include <cerrno>    // errno, EIO
#include <cstdarg>   // va_list
#include <cstdio>    // vsnprintf
#include <cstring>   // strerror
#include <exception> // std::exception
#include <new>       // std::bad_alloc, std::nothrow
#include <ostream>   // std::ostream
#include <streambuf> // std::streambuf
#include <string>    // std::string

#include <sys/types.h> // off_t
#include <unistd.h>    // write, lseek

#include <openvdb/io/Archive.h>
#include <openvdb/openvdb.h>
#include <openvdb/tools/Prune.h>

// The set of grids of one file (export_vdb.h keeps it opaque).
struct acm_vdb_file {
    openvdb::GridPtrVec grids;
    std::string creator;
};

namespace {

__attribute__((format(printf, 3, 4))) void say(char *msg, size_t size, const char *fmt, ...)
{
    if (msg == nullptr || size == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, size, fmt, ap);
    va_end(ap);
}

// Run f, turning every exception into a status and a message (what: the
// operation, for the message).
template <typename F> acm_status guarded(char *msg, size_t size, const char *what, F &&f) noexcept
{
    try {
        return f();
    } catch (const std::bad_alloc &) {
        say(msg, size, "%s: out of memory", what);
        return ACM_ERR_NO_MEMORY;
    } catch (const openvdb::IoError &e) {
        say(msg, size, "%s: %s", what, e.what());
        return ACM_ERR_IO;
    } catch (const std::exception &e) {
        say(msg, size, "%s: OpenVDB failed: %s", what, e.what());
        return ACM_ERR_INTERNAL;
    } catch (...) {
        say(msg, size, "%s: OpenVDB failed with an unknown exception", what);
        return ACM_ERR_INTERNAL;
    }
}

// An output stream buffer over a file descriptor: buffered write(2), and
// seeks by lseek(2), since the archive writer goes back to fill in the grids'
// offsets. The errno of the first failure is kept for the message.
class fd_buffer final : public std::streambuf {
public:
    explicit fd_buffer(int fd) : fd_(fd) { setp(buf_, buf_ + sizeof buf_); }
    int error() const { return error_; }

protected:
    int_type overflow(int_type c) override
    {
        if (!drain())
            return traits_type::eof();
        if (!traits_type::eq_int_type(c, traits_type::eof())) {
            *pptr() = traits_type::to_char_type(c);
            pbump(1);
        }
        return traits_type::not_eof(c);
    }

    int sync() override { return drain() ? 0 : -1; }

    pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode) override
    {
        if (!drain())
            return pos_type(off_type(-1));
        const int whence = dir == std::ios_base::beg ? SEEK_SET
                           : dir == std::ios_base::cur ? SEEK_CUR
                                                       : SEEK_END;
        const off_t at = lseek(fd_, static_cast<off_t>(off), whence);
        if (at < 0) {
            fail(errno);
            return pos_type(off_type(-1));
        }
        return pos_type(static_cast<off_type>(at));
    }

    pos_type seekpos(pos_type pos, std::ios_base::openmode which) override
    {
        return seekoff(off_type(pos), std::ios_base::beg, which);
    }

private:
    void fail(int e)
    {
        if (error_ == 0)
            error_ = e != 0 ? e : EIO;
    }

    // Write out what is buffered; false on failure (then nothing more is written).
    bool drain()
    {
        const char *p = pbase();
        size_t left = static_cast<size_t>(pptr() - pbase());
        while (left > 0 && error_ == 0) {
            const ssize_t n = ::write(fd_, p, left);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                fail(n < 0 ? errno : EIO);
            else {
                p += n;
                left -= static_cast<size_t>(n);
            }
        }
        setp(buf_, buf_ + sizeof buf_);
        return error_ == 0;
    }

    int fd_;
    int error_ = 0;
    char buf_[1 << 16];
};

// The archive writer that io::File uses, aimed at our stream: io::File opens
// its own std::ofstream and does not check it after writing, so a full disk
// would go unnoticed.
class stream_archive final : public openvdb::io::Archive {
public:
    void write_to(std::ostream &os, const openvdb::GridCPtrVec &grids,
                  const openvdb::MetaMap &meta) const
    {
        Archive::write(os, grids, /*seekable=*/true, meta);
    }
};

openvdb::math::Transform::Ptr transform_of(const acm_vdb_grid &g)
{
    openvdb::math::Transform::Ptr xf = openvdb::math::Transform::createLinearTransform(g.voxel_size);
    xf->postTranslate(openvdb::Vec3d(g.origin));
    return xf;
}

// A grid of the dense values (value(p): the voxel at p), active where keep(v).
template <typename GridT, typename Value, typename Keep>
typename GridT::Ptr from_dense(const acm_vdb_grid &g, Value value, Keep keep)
{
    using V = typename GridT::ValueType;
    typename GridT::Ptr grid = GridT::create(V(0.0f));
    typename GridT::Accessor acc = grid->getAccessor();
    const size_t comps = static_cast<size_t>(g.components);
    const float *p = g.values;
    for (int32_t k = 0; k < g.n[2]; ++k)
        for (int32_t j = 0; j < g.n[1]; ++j)
            for (int32_t i = 0; i < g.n[0]; ++i, p += comps) {
                const V v = value(p);
                if (keep(v))
                    acc.setValue(openvdb::Coord(i, j, k), v);
            }
    openvdb::tools::prune(grid->tree()); // exact: only leaves of one value become tiles
    grid->setTransform(transform_of(g));
    grid->setName(g.name);
    return grid;
}

openvdb::GridBase::Ptr scalar_grid(const acm_vdb_grid &g)
{
    const float cutoff = g.cutoff;
    const bool fog = g.fog != 0;
    openvdb::FloatGrid::Ptr grid = from_dense<openvdb::FloatGrid>(
        g, [](const float *p) { return *p; }, [=](float v) { return !fog || v > cutoff; });
    grid->setGridClass(fog ? openvdb::GRID_FOG_VOLUME : openvdb::GRID_UNKNOWN);
    return grid;
}

openvdb::GridBase::Ptr vector_grid(const acm_vdb_grid &g)
{
    openvdb::Vec3SGrid::Ptr grid = from_dense<openvdb::Vec3SGrid>(
        g, [](const float *p) { return openvdb::Vec3s(p[0], p[1], p[2]); },
        [](const openvdb::Vec3s &) { return true; });
    grid->setGridClass(openvdb::GRID_UNKNOWN);
    grid->setVectorType(openvdb::VEC_CONTRAVARIANT_RELATIVE);
    return grid;
}

acm_status vdb_begin(acm_vdb_file **out, const char *creator, char *msg, size_t size)
{
    return guarded(msg, size, "cannot start an OpenVDB file", [&] {
        openvdb::initialize(); // idempotent; registers the types and sets up Blosc
        acm_vdb_file *f = new acm_vdb_file;
        f->creator = creator;
        *out = f;
        return ACM_OK;
    });
}

acm_status vdb_add(acm_vdb_file *file, const acm_vdb_grid *grid, char *msg, size_t size)
{
    const acm_vdb_grid &g = *grid;
    return guarded(msg, size, g.name, [&] {
        openvdb::GridBase::Ptr vdb = g.components == 3 ? vector_grid(g) : scalar_grid(g);
        vdb->setCreator(file->creator);
        file->grids.push_back(vdb);
        return ACM_OK;
    });
}

acm_status vdb_write(acm_vdb_file *file, int fd, const char *path, char *msg, size_t size)
{
    return guarded(msg, size, path, [&] {
        fd_buffer buf(fd);
        std::ostream os(&buf);
        os.exceptions(std::ios_base::badbit | std::ios_base::failbit);
        openvdb::MetaMap meta;
        meta.insertMeta("creator", openvdb::StringMetadata(file->creator));
        const openvdb::GridCPtrVec grids(file->grids.begin(), file->grids.end());
        try {
            stream_archive().write_to(os, grids, meta);
            os.flush();
        } catch (...) { // the stream's failure, whatever its type (libstdc++ has two)
            if (buf.error() == 0)
                throw; // not the file: OpenVDB's own failure, for guarded()
        }
        if (buf.error() != 0) {
            say(msg, size, "cannot write %s: %s", path, std::strerror(buf.error()));
            return ACM_ERR_IO;
        }
        return ACM_OK;
    });
}

void vdb_end(acm_vdb_file *file) { delete file; }

const acm_vdb_writer writer = {ACM_VERSION_STRING, vdb_begin, vdb_add, vdb_write, vdb_end};

} // namespace

// The module's entry point, found by dlsym (export_vdb.h).
extern "C" __attribute__((visibility("default"))) const acm_vdb_writer *acm_vdb_writer_1(void)
{
    return &writer;
}
