"""The C ABI of libacmlbm, seen through ctypes: the library found and loaded,
its structs mirrored field for field, every function bound with its prototype.

Nothing here is public: the classes of the package wrap it. The structs are
checked against the C compiler's layout by tests/test_abi.py (sizes and field
offsets), so a header change that this file misses fails the tests.

The library is looked for, in order: the file named by the environment variable
ACMLBM_LIBRARY; libacmlbm.so beside this file (an installed package: pip
install puts it there); the system's libacmlbm.so.1 (an install of the C
library, through the loader's search path).
"""
from __future__ import annotations

import ctypes
import os
import pathlib
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_int,
                    c_int32, c_int64, c_size_t, c_uint, c_uint32, c_uint64, c_void_p)

# The ABI version this package was written for: its functions exist from this
# library version on (acm_version_number() is checked at load).
NEEDS_VERSION = (1, 9, 0)

c_status = c_int  # acm_status, an int-sized enum
c_enum = c_int

LAYOUT_STRING_SIZE = 256


def _candidates() -> list[str]:
    out = []
    env = os.environ.get("ACMLBM_LIBRARY", "")
    if env:
        out.append(env)
    here = pathlib.Path(__file__).resolve().parent / "libacmlbm.so"
    if here.exists():
        out.append(str(here))
    out.append("libacmlbm.so.1")
    return out


def _load() -> ctypes.CDLL:
    tried = []
    for path in _candidates():
        try:
            # CDLL (not PyDLL): every foreign call releases the GIL while it runs
            return ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        except OSError as e:
            tried.append(f"{path}: {e}")
    raise ImportError("cannot load libacmlbm (set ACMLBM_LIBRARY to its path): "
                      + "; ".join(tried))


lib = _load()


# ---- structs (fields appended only, as the C headers promise) ---------------------

def _arr(t, n):
    return t * n


class DomainOptions(Structure):
    _fields_ = [("version", c_uint32), ("nx", c_int32), ("ny", c_int32), ("nz", c_int32),
                ("viscosity", c_double), ("tau", c_double), ("collision", c_enum),
                ("backend", c_enum), ("device", c_int32), ("precision", c_enum),
                ("layout", c_void_p), ("initial_density", c_double),
                ("initial_velocity", _arr(c_double, 3)), ("max_speed", c_double),
                ("error_buffer", c_void_p), ("error_buffer_size", c_size_t),
                ("subdomains", c_int32), ("devices", POINTER(c_int32))]
    VERSION = 2


class CollisionOptions(Structure):
    _fields_ = [("version", c_uint32), ("model", c_enum), ("high_order_rate", c_double),
                ("bulk_rate", c_double), ("bulk_follows_high_order", c_int32),
                ("safety_net", c_int32), ("max_high_order_rate", c_double),
                ("li2018_nu0", _arr(c_double, 4)), ("li2020_theta", _arr(c_double, 4)),
                ("li2020_tau0", c_double)]
    VERSION = 1


class DivergenceEvent(Structure):
    _fields_ = [("step", c_int64), ("rewound_to", c_int64), ("message", c_char_p)]


DIVERGENCE_FN = CFUNCTYPE(None, c_void_p, POINTER(DivergenceEvent), c_void_p)
FACE_VALUES_FN = CFUNCTYPE(c_int, c_void_p, c_enum, c_int64, POINTER(c_double), c_size_t,
                           c_void_p)


class DivergencePolicy(Structure):
    _fields_ = [("version", c_uint32), ("action", c_enum), ("snapshot_interval", c_int64),
                ("callback", DIVERGENCE_FN), ("user_data", c_void_p)]
    VERSION = 1


class DomainStats(Structure):
    _fields_ = [("version", c_uint32), ("step", c_int64), ("mass", c_double),
                ("momentum", _arr(c_double, 3)), ("kinetic_energy", c_double),
                ("max_speed", c_double), ("fallback_cells_last_step", c_int64),
                ("fallback_cells_total", c_int64)]
    VERSION = 1


class DomainInfo(Structure):
    _fields_ = [("version", c_uint32), ("nx", c_int32), ("ny", c_int32), ("nz", c_int32),
                ("backend", c_enum), ("device", c_int32), ("precision", c_enum),
                ("collision", c_enum), ("viscosity", c_double), ("tau", c_double),
                ("csoa_group", c_int64), ("kernel", c_enum), ("block_size", c_int32),
                ("step", c_int64), ("memory_bytes", c_uint64), ("streaming", c_enum),
                ("bytes_per_cell", c_double)]
    VERSION = 2


class LoadOptions(Structure):
    _fields_ = [("version", c_uint32), ("backend", c_enum), ("device", c_int32),
                ("layout", c_void_p), ("error_buffer", c_void_p),
                ("error_buffer_size", c_size_t)]
    VERSION = 1


class MeshOptions(Structure):
    _fields_ = [("version", c_uint32), ("format", c_enum), ("max_triangles", c_uint64),
                ("error_buffer", c_void_p), ("error_buffer_size", c_size_t)]
    VERSION = 1


class MeshInfo(Structure):
    _fields_ = [("version", c_uint32), ("vertex_count", c_uint64),
                ("triangle_count", c_uint64), ("degenerate_triangles", c_uint64),
                ("bbox_min", _arr(c_double, 3)), ("bbox_max", _arr(c_double, 3)),
                ("area", c_double), ("volume", c_double), ("centroid", _arr(c_double, 3)),
                ("inertia", _arr(c_double, 6)), ("closed", c_int32)]
    VERSION = 1


class SmokeOptions(Structure):
    _fields_ = [("version", c_uint32), ("capacity", c_uint64), ("seed", c_uint64)]
    VERSION = 1


class Emitter(Structure):
    _fields_ = [("version", c_uint32), ("shape", c_enum), ("lo", _arr(c_double, 3)),
                ("hi", _arr(c_double, 3)), ("centre", _arr(c_double, 3)),
                ("radius", c_double), ("points", POINTER(c_double)),
                ("point_count", c_size_t), ("rate", c_double), ("lifetime", c_int64),
                ("solid", c_void_p), ("offset", c_double)]
    VERSION = 2


class SmokeInfo(Structure):
    _fields_ = [("version", c_uint32), ("capacity", c_uint64), ("alive", c_uint64),
                ("emitted", c_uint64), ("left", c_uint64), ("expired", c_uint64),
                ("dropped", c_uint64), ("emitters", c_int32), ("absorbed", c_uint64)]
    VERSION = 2


class SolidOptions(Structure):
    _fields_ = [("version", c_uint32), ("mesh", c_void_p), ("sample_count", c_size_t),
                ("sample_points", POINTER(c_double)), ("sample_areas", POINTER(c_double)),
                ("scale", c_double), ("position", _arr(c_double, 3)),
                ("orientation", _arr(c_double, 4)), ("samples_per_cell", c_double),
                ("surface_inset", c_double), ("seed", c_uint64), ("ib_alpha", c_double),
                ("motion", c_enum), ("velocity", _arr(c_double, 3)),
                ("angular_velocity", _arr(c_double, 3)), ("density", c_double),
                ("mass", c_double), ("volume", c_double), ("inertia", _arr(c_double, 6)),
                ("gravity", _arr(c_double, 3)), ("max_samples", c_uint64)]
    VERSION = 1


class SolidState(Structure):
    _fields_ = [("version", c_uint32), ("position", _arr(c_double, 3)),
                ("orientation", _arr(c_double, 4)), ("velocity", _arr(c_double, 3)),
                ("angular_velocity", _arr(c_double, 3))]
    VERSION = 1


class SolidInfo(Structure):
    _fields_ = [("version", c_uint32), ("sample_count", c_uint64), ("area", c_double),
                ("sample_spacing", c_double), ("motion", c_enum), ("volume", c_double),
                ("mass", c_double), ("inertia", _arr(c_double, 6)), ("ib_alpha", c_double),
                ("resorts", c_int64)]
    VERSION = 1


class TuneProgress(Structure):
    _fields_ = [("done", c_int32), ("planned", c_int32), ("elapsed_s", c_double),
                ("stage", c_char_p), ("candidate", c_char_p), ("candidate_ms", c_double),
                ("best_ms", c_double)]


TUNE_PROGRESS_FN = CFUNCTYPE(c_int, POINTER(TuneProgress), c_void_p)


class TuneOptions(Structure):
    _fields_ = [("version", c_uint32), ("time_budget_s", c_double), ("window_steps", c_int64),
                ("flags", c_uint32), ("cache_path", c_char_p), ("progress", TUNE_PROGRESS_FN),
                ("user_data", c_void_p)]
    VERSION = 1


class TuneEntry(Structure):
    _fields_ = [("version", c_uint32), ("layout", _arr(c_char, LAYOUT_STRING_SIZE)),
                ("stage", c_enum), ("status", c_status), ("ms_per_step", c_double),
                ("mlups", c_double), ("steps", c_int64), ("message", _arr(c_char, 160))]
    VERSION = 1


class TuneSummary(Structure):
    _fields_ = [("version", c_uint32), ("entries", c_int32), ("best", c_int32),
                ("default_entry", c_int32), ("worst", c_int32), ("failed", c_int32),
                ("seconds", c_double), ("cache_hit", c_int32), ("budget_reached", c_int32),
                ("best_layout", _arr(c_char, LAYOUT_STRING_SIZE)),
                ("not_tuned", _arr(c_char, 128))]
    VERSION = 1


# the structs whose layout tests/test_abi.py compares with the C compiler's
STRUCTS = {
    "acm_domain_options": DomainOptions, "acm_collision_options": CollisionOptions,
    "acm_divergence_event": DivergenceEvent, "acm_divergence_policy": DivergencePolicy,
    "acm_domain_stats": DomainStats, "acm_domain_info": DomainInfo,
    "acm_load_options": LoadOptions, "acm_mesh_options": MeshOptions,
    "acm_mesh_info": MeshInfo, "acm_smoke_options": SmokeOptions, "acm_emitter": Emitter,
    "acm_smoke_info": SmokeInfo, "acm_solid_options": SolidOptions,
    "acm_solid_state": SolidState, "acm_solid_info": SolidInfo,
    "acm_tune_progress": TuneProgress, "acm_tune_options": TuneOptions,
    "acm_tune_entry": TuneEntry, "acm_tune_summary": TuneSummary,
}

# ---- functions ---------------------------------------------------------------------

P = c_void_p           # a handle, or any pointer passed through
PP = POINTER(c_void_p)  # a handle's address (out)
D3 = POINTER(c_double)
PI64 = POINTER(c_int64)
PSZ = POINTER(c_size_t)

# name: (result, argument types); every acm_status result is checked by the caller
PROTOTYPES = {
    # acm_common.h
    "acm_status_string": (c_char_p, [c_status]),
    "acm_backend_available": (c_int, [c_enum]),
    "acm_version_number": (c_uint, []),
    "acm_version_string": (c_char_p, []),
    # acm_domain.h
    "acm_domain_options_init": (c_status, [POINTER(DomainOptions), c_uint32]),
    "acm_collision_options_init": (c_status, [POINTER(CollisionOptions), c_uint32]),
    "acm_domain_create": (c_status, [PP, POINTER(DomainOptions)]),
    "acm_domain_destroy": (None, [P]),
    "acm_domain_last_error": (c_char_p, [P]),
    "acm_step": (c_status, [P, c_int64]),
    "acm_divergence_policy_init": (c_status, [POINTER(DivergencePolicy), c_uint32]),
    "acm_domain_set_divergence_policy": (c_status, [P, POINTER(DivergencePolicy)]),
    "acm_domain_get_divergence_policy": (c_status, [P, POINTER(DivergencePolicy)]),
    "acm_domain_set_face": (c_status, [P, c_enum, c_enum, D3]),
    "acm_domain_set_face_values": (c_status, [P, c_enum, c_enum, c_void_p, c_size_t]),
    "acm_domain_set_face_function": (c_status, [P, c_enum, FACE_VALUES_FN, c_void_p]),
    "acm_domain_set_face_absorber": (c_status, [P, c_enum, c_int32, c_double, c_double, D3]),
    "acm_domain_get_face_absorber": (c_status, [P, c_enum, POINTER(c_int32), D3, D3, D3]),
    "acm_domain_get_face": (c_status, [P, c_enum, POINTER(c_enum), D3]),
    "acm_domain_set_body_force": (c_status, [P, D3]),
    "acm_domain_set_collision": (c_status, [P, POINTER(CollisionOptions)]),
    "acm_domain_get_collision": (c_status, [P, POINTER(CollisionOptions)]),
    "acm_domain_set_param": (c_status, [P, c_enum, c_int64]),
    "acm_domain_get_param": (c_status, [P, c_enum, PI64]),
    "acm_param_bounds": (c_status, [c_enum, PI64, PI64]),
    "acm_domain_init_uniform": (c_status, [P, c_double, D3]),
    "acm_domain_init_fields": (c_status, [P, c_enum, c_void_p, c_void_p, c_size_t]),
    "acm_domain_field_size": (c_status, [P, c_enum, c_enum, PSZ]),
    "acm_domain_get_field": (c_status, [P, c_enum, c_enum, c_void_p, c_size_t]),
    "acm_domain_set_field": (c_status, [P, c_enum, c_enum, c_void_p, c_size_t]),
    "acm_domain_probe": (c_status, [P, c_int32, c_int32, c_int32, D3, D3]),
    "acm_domain_sample_velocity": (c_status, [P, c_void_p, c_size_t, c_void_p]),
    "acm_domain_sample_velocity_begin": (c_status, [P, c_void_p, c_size_t]),
    "acm_domain_sample_velocity_end": (c_status, [P, c_void_p, c_size_t]),
    "acm_domain_get_stats": (c_status, [P, POINTER(DomainStats)]),
    "acm_domain_set_layout": (c_status, [P, P]),
    "acm_domain_get_layout": (c_status, [P, P]),
    "acm_domain_get_info": (c_status, [P, POINTER(DomainInfo)]),
    # acm_layout.h
    "acm_layout_create": (c_status, [PP]),
    "acm_layout_destroy": (None, [P]),
    "acm_layout_set": (c_status, [P, c_enum, c_int64]),
    "acm_layout_get": (c_status, [P, c_enum, PI64]),
    "acm_layout_param_bounds": (c_status, [c_enum, PI64, PI64]),
    "acm_layout_to_string": (c_status, [P, c_char_p, c_size_t]),
    "acm_layout_from_string": (c_status, [P, c_char_p]),
    "acm_layout_last_error": (c_char_p, [P]),
    # acm_checkpoint.h
    "acm_load_options_init": (c_status, [POINTER(LoadOptions), c_uint32]),
    "acm_domain_save": (c_status, [P, c_char_p]),
    "acm_domain_load": (c_status, [PP, c_char_p, POINTER(LoadOptions)]),
    "acm_domain_get_solids": (c_status, [P, PP, c_size_t, PSZ]),
    "acm_domain_get_smokes": (c_status, [P, PP, c_size_t, PSZ]),
    # acm_mesh.h
    "acm_mesh_options_init": (c_status, [POINTER(MeshOptions), c_uint32]),
    "acm_mesh_create": (c_status, [PP, c_void_p, c_size_t, c_void_p, c_size_t,
                                   POINTER(MeshOptions)]),
    "acm_mesh_load": (c_status, [PP, c_char_p, POINTER(MeshOptions)]),
    "acm_mesh_load_memory": (c_status, [PP, c_void_p, c_size_t, POINTER(MeshOptions)]),
    "acm_mesh_destroy": (None, [P]),
    "acm_mesh_get_info": (c_status, [P, POINTER(MeshInfo)]),
    "acm_mesh_get_vertices": (c_status, [P, c_void_p, c_size_t]),
    "acm_mesh_get_triangles": (c_status, [P, c_void_p, c_size_t]),
    "acm_mesh_last_error": (c_char_p, [P]),
    # acm_solid.h
    "acm_solid_options_init": (c_status, [POINTER(SolidOptions), c_uint32]),
    "acm_solid_create": (c_status, [PP, P, POINTER(SolidOptions)]),
    "acm_solid_destroy": (None, [P]),
    "acm_solid_last_error": (c_char_p, [P]),
    "acm_solid_get_state": (c_status, [P, POINTER(SolidState)]),
    "acm_solid_set_state": (c_status, [P, POINTER(SolidState)]),
    "acm_solid_set_motion": (c_status, [P, c_enum]),
    "acm_solid_set_load": (c_status, [P, D3, D3]),
    "acm_solid_get_force": (c_status, [P, D3, D3]),
    "acm_solid_get_info": (c_status, [P, POINTER(SolidInfo)]),
    "acm_solid_get_samples": (c_status, [P, c_void_p, c_size_t]),
    "acm_solid_is_inside": (c_status, [P, D3, POINTER(c_int)]),
    "acm_solid_mark_occupancy": (c_status, [P, c_void_p, c_size_t]),
    # acm_smoke.h
    "acm_smoke_options_init": (c_status, [POINTER(SmokeOptions), c_uint32]),
    "acm_smoke_create": (c_status, [PP, P, POINTER(SmokeOptions)]),
    "acm_smoke_destroy": (None, [P]),
    "acm_smoke_add_emitter": (c_status, [P, POINTER(Emitter)]),
    "acm_smoke_get_info": (c_status, [P, POINTER(SmokeInfo)]),
    "acm_smoke_get_particles": (c_status, [P, c_void_p, c_size_t, PSZ]),
    "acm_smoke_density": (c_status, [P, c_int32, c_void_p, c_size_t]),
    "acm_smoke_last_error": (c_char_p, [P]),
    # acm_export.h
    "acm_domain_export_vti": (c_status, [P, c_char_p, POINTER(c_enum), c_size_t]),
    "acm_smoke_export": (c_status, [P, c_char_p, c_enum]),
    "acm_smoke_export_density": (c_status, [P, c_char_p, c_int32]),
    "acm_vdb_available": (c_int, []),
    "acm_smoke_export_vdb": (c_status, [P, c_char_p, c_int32, c_uint32]),
    "acm_domain_export_vdb": (c_status, [P, c_char_p, POINTER(c_enum), c_size_t]),
    # acm_tune.h
    "acm_tune_options_init": (c_status, [POINTER(TuneOptions), c_uint32]),
    "acm_domain_autotune": (c_status, [P, POINTER(TuneOptions), P, PP]),
    "acm_tune_report_summary": (c_status, [P, POINTER(TuneSummary)]),
    "acm_tune_report_entry": (c_status, [P, c_int32, POINTER(TuneEntry)]),
    "acm_tune_report_write_csv": (c_status, [P, c_char_p]),
    "acm_tune_report_destroy": (None, [P]),
    # acm_cuda.h (every build has them: ACM_ERR_NOT_BUILT without CUDA)
    "acm_cuda_domain_set_stream": (c_status, [P, c_void_p]),
    "acm_cuda_domain_get_stream": (c_status, [P, PP]),
    "acm_cuda_step_async": (c_status, [P, c_int64]),
    "acm_cuda_step_prepare": (c_status, [P, c_int64]),
    "acm_cuda_graphs_recorded": (c_status, [P, c_void_p]),
    "acm_cuda_domain_synchronize": (c_status, [P]),
    "acm_cuda_domain_map_fields": (c_status, [P, PP, PP]),
    "acm_cuda_smoke_density": (c_status, [P, c_int32, c_void_p, c_size_t]),
}


class _Functions:
    """The bound functions, as attributes: fn.acm_step(...)."""

    def __init__(self, dll: ctypes.CDLL):
        for name, (res, args) in PROTOTYPES.items():
            f = getattr(dll, name)
            f.restype = res
            f.argtypes = args
            setattr(self, name, f)


fn = _Functions(lib)


def _check_version() -> None:
    have = fn.acm_version_number()
    need = NEEDS_VERSION[0] * 10000 + NEEDS_VERSION[1] * 100 + NEEDS_VERSION[2]
    if have // 10000 != NEEDS_VERSION[0] or have < need:
        raise ImportError(f"libacmlbm {fn.acm_version_string().decode()} is loaded; this "
                          f"package needs {'.'.join(map(str, NEEDS_VERSION))} or a later "
                          f"{NEEDS_VERSION[0]}.x")


_check_version()


def d3(values, name: str = "value") -> ctypes.Array:
    """Three finite-or-not doubles for a double[3] argument (the library checks them)."""
    v = tuple(float(x) for x in values)
    if len(v) != 3:
        raise ValueError(f"{name} needs 3 components, got {len(v)}")
    return (c_double * 3)(*v)
