"""Domain: creation, stepping, fields (shapes, dtypes, out=), faces, parameters,
layouts, checkpoints and exports, against what the C library reports."""
import ctypes
import threading

import numpy as np
import pytest

import acmlbm


def test_create_reports_what_was_asked(domain):
    i = domain.info()
    assert (i.nx, i.ny, i.nz) == (12, 10, 8)
    assert domain.grid == (12, 10, 8) and domain.shape == (8, 10, 12)
    assert i.backend == acmlbm.Backend.CPU
    assert i.precision == acmlbm.Precision.FP32
    assert i.collision == acmlbm.Collision.ACM_LI2018
    assert i.viscosity == pytest.approx(0.05)
    assert i.tau == pytest.approx(3 * 0.05 + 0.5)
    assert "12x10x8 cpu" in repr(domain)


def test_keyword_options_reach_the_library():
    with acmlbm.Domain((6, 6, 6), tau=0.8, collision="bgk", precision="fp64",
                       density=1.2, velocity=(0.01, 0, 0), backend=acmlbm.Backend.CPU) as d:
        i = d.info()
        assert i.collision == acmlbm.Collision.BGK and i.precision == acmlbm.Precision.FP64
        assert i.tau == pytest.approx(0.8)
        rho = d.density(dtype=np.float64)
        assert np.allclose(rho, 1.2)
        assert np.allclose(d.velocity(dtype=np.float64)[..., 0], 0.01)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_field_shapes_and_dtypes(domain, dtype):
    assert domain.density(dtype=dtype).shape == (8, 10, 12)
    assert domain.density(dtype=dtype).dtype == dtype
    assert domain.velocity(dtype=dtype).shape == (8, 10, 12, 3)
    assert domain.force(dtype=dtype).shape == (8, 10, 12, 3)
    assert domain.populations(dtype=dtype).shape == (8, 10, 12, 27)


def test_out_is_filled_in_place_and_checked(domain):
    out = np.full((8, 10, 12, 3), 7.0, np.float64)
    got = domain.velocity(out=out)
    assert got is out and np.all(out == 0.0)
    with pytest.raises(ValueError, match="shape"):
        domain.velocity(out=np.empty((8, 10, 12), np.float32))
    with pytest.raises(ValueError, match="contiguous"):
        domain.density(out=np.empty((12, 10, 8), np.float32).T)
    with pytest.raises(TypeError, match="float32 or float64"):
        domain.density(out=np.empty((8, 10, 12), np.int32))
    with pytest.raises(TypeError, match="ndarray"):
        domain.density(out=[0.0])


def test_fields_are_indexed_z_y_x(domain):
    rho = np.ones((8, 10, 12))
    rho[5, 3, 2] = 1.1  # z = 5, y = 3, x = 2
    u = np.zeros((8, 10, 12, 3))
    u[1, 2, 3] = (0.01, 0.02, 0.03)
    domain.init_fields(density=rho, velocity=u)
    assert domain.probe(2, 3, 5)[0] == pytest.approx(1.1)
    assert domain.probe(3, 2, 1)[1] == pytest.approx((0.01, 0.02, 0.03))
    assert domain.density(dtype=np.float64)[5, 3, 2] == pytest.approx(1.1)


def test_populations_round_trip_is_exact(domain):
    domain.init_uniform(1.0, (0.02, 0.0, -0.01))
    domain.step(3)
    f = domain.populations()
    domain.step(2)
    domain.set_populations(f)
    assert np.array_equal(domain.populations(), f)


def test_lid_driven_flow_moves_the_fluid(domain):
    domain.set_face("y_min", "wall")
    domain.set_face(acmlbm.Face.Y_MAX, acmlbm.Boundary.WALL, velocity=(0.05, 0, 0))
    assert domain.face("y_max") == (acmlbm.Boundary.WALL, (0.05, 0.0, 0.0))
    assert domain.step(40) == 40
    s = domain.stats()
    assert s.step == 40
    assert s.momentum[0] > 0 and s.mass == pytest.approx(12 * 10 * 8, rel=1e-5)
    u = domain.velocity()
    assert u[:, -1, :, 0].mean() > u[:, 0, :, 0].mean()


def test_body_force_and_force_field(domain):
    domain.set_body_force((1e-5, 0, 0))
    domain.step(10)
    # the half-force velocity: sum rho u = (steps + 1/2) F V
    assert domain.stats().momentum[0] == pytest.approx(10.5 * 1e-5 * 960, rel=1e-6)
    f = np.zeros((8, 10, 12, 3), np.float32)
    f[..., 1] = 2e-5
    domain.set_force(f)
    body = np.array([1e-5, 0, 0], np.float32)
    assert np.allclose(domain.force(), f + body)  # what a cell feels: field and body force
    domain.set_force(None)
    assert np.allclose(domain.force(), np.broadcast_to(body, f.shape))


def test_sample_velocity_interpolates(domain):
    domain.init_uniform(1.0, (0.01, 0.02, 0.03))
    u = domain.sample_velocity([[1.5, 2.5, 3.5], [0, 0, 0]])
    assert u.shape == (2, 3) and np.allclose(u, [0.01, 0.02, 0.03])


def test_sample_velocity_begin_end_reads_the_state_at_begin(domain):
    domain.init_uniform(1.0, (0.01, 0.02, 0.03))
    pts = [[1.5, 2.5, 3.5], [0, 0, 0]]
    domain.sample_velocity_begin(pts)
    with pytest.raises(acmlbm.BadStateError):  # one read at a time
        domain.sample_velocity_begin(pts)
    u = domain.sample_velocity_end()
    assert u.shape == (2, 3) and np.allclose(u, [0.01, 0.02, 0.03])
    with pytest.raises(acmlbm.BadStateError):  # ended
        domain.sample_velocity_end()


def test_inlet_outlet_values_function_and_absorber():
    with acmlbm.Domain((16, 8, 8), viscosity=0.05, backend="cpu") as d:
        d.set_face("x_min", "inlet", velocity=(0.03, 0, 0))
        d.set_face("x_max", "outlet")
        prof = np.zeros((8, 8, 3))
        prof[..., 0] = 0.02
        d.set_face_values("x_min", prof)
        d.set_absorber("x_max", 4, 0.5, 1.0, (0.02, 0, 0))
        a = d.absorber("x_max")
        assert (a.cells, a.strength, a.velocity) == (4, 0.5, (0.02, 0.0, 0.0))
        seen = []

        def gust(step, values):
            seen.append(step)
            values[:] = 0.0  # every value is the function's to fill
            values[0::3] = 0.01 + 0.001 * (step % 5)

        d.set_face_function("x_min", gust)
        d.step(6)
        assert seen == [1, 2, 3, 4, 5, 6]
        d.set_face_function("x_min", None)
        d.step(1)
        assert len(seen) == 6
        assert d.velocity()[:, :, 1, 0].mean() > 0.005


def test_an_exception_in_a_face_function_stops_the_step_and_is_raised():
    with acmlbm.Domain((8, 8, 8), viscosity=0.05, backend="cpu") as d:
        d.set_face("z_min", "inlet", velocity=(0, 0, 0.01))
        d.set_face("z_max", "outlet")

        def broken(step, values):
            if step == 3:
                raise KeyError("no wind table for step 3")
            values[:] = 0.0
            values[2::3] = 0.01

        d.set_face_function("z_min", broken)
        with pytest.raises(KeyError, match="step 3"):
            d.step(5)
        assert d.stats().step == 2  # the steps before it stay


def test_collision_options_round_trip(domain):
    domain.set_collision("cm_mrt", high_order_rate=1.2)
    c = domain.collision()
    assert c["model"] == acmlbm.Collision.CM_MRT and c["high_order_rate"] == 1.2
    domain.set_collision("acm_li2018", li2018_nu0=(1e-3, 1e-3, 1e-3, 1e-3))
    assert domain.collision()["li2018_nu0"] == (1e-3,) * 4
    with pytest.raises(TypeError, match="unknown collision parameter"):
        domain.set_collision("bgk", omega=1.0)
    with pytest.raises(acmlbm.OutOfRangeError):
        domain.set_collision("cm_mrt", high_order_rate=2.5)


def test_parameters(domain):
    domain.threads = 1
    assert domain.threads == 1
    domain.ib_iterations = 3
    assert domain.ib_iterations == 3
    with pytest.raises(acmlbm.OutOfRangeError) as e:
        domain.ib_iterations = 99
    assert "99" in str(e.value)


def test_layout_relayout_keeps_the_state(domain):
    domain.init_uniform(1.0, (0.01, 0, 0))
    domain.step(2)
    before = domain.populations()
    lay = domain.layout
    assert lay.streaming == acmlbm.Streaming.TWO_ARRAYS
    domain.layout = acmlbm.Layout(streaming="in_place")
    assert domain.layout.streaming == acmlbm.Streaming.IN_PLACE
    assert np.array_equal(domain.populations(), before)
    again = acmlbm.Layout.parse(str(lay))
    assert again == lay
    assert acmlbm.Layout.bounds("block_size")[1] == 256
    with pytest.raises(acmlbm.BadFormatError):
        acmlbm.Layout.parse("kernel=warp-drive")
    with pytest.raises(AttributeError, match="no parameter"):
        acmlbm.Layout().colour = 3


def test_divergence_raises_and_the_callback_hears_of_it():
    events = []
    with acmlbm.Domain((8, 8, 8), tau=0.5001, collision="bgk", backend="cpu") as d:
        d.set_divergence_policy("rewind", snapshot_interval=5, callback=events.append)
        d.init_uniform(1.0, (0.2, 0.0, 0.0))
        d.set_body_force((0.05, 0.0, 0.0))
        with pytest.raises(acmlbm.DivergedError) as e:
            d.step(200)
        assert isinstance(e.value, ArithmeticError) and e.value.status == 401
        assert "step" in e.value.message
        assert len(events) == 1 and events[0].rewound_to >= 0
        assert events[0].step > events[0].rewound_to


def test_checkpoint_round_trip(domain, tmp_path):
    domain.set_face("y_max", "wall", velocity=(0.05, 0, 0))
    domain.set_face("y_min", "wall")
    domain.step(5)
    path = tmp_path / "state.acm"
    domain.save(path)
    with acmlbm.Domain.load(path, backend="cpu") as twin:
        assert twin.stats().step == 5
        domain.step(5)
        twin.step(5)
        assert np.array_equal(twin.populations(), domain.populations())
    with pytest.raises(acmlbm.FileError):
        acmlbm.Domain.load(tmp_path / "missing.acm")
    (tmp_path / "junk.acm").write_bytes(b"not a checkpoint" * 10)
    with pytest.raises(acmlbm.BadFormatError) as e:
        acmlbm.Domain.load(tmp_path / "junk.acm")
    assert isinstance(e.value, ValueError) and e.value.message


def test_exports(domain, tmp_path):
    domain.export_vti(tmp_path / "f.vti")
    assert (tmp_path / "f.vti").read_bytes().startswith(b"<?xml")
    if acmlbm.vdb_available():
        domain.export_vdb(tmp_path / "f.vdb", fields=["density"])
        assert (tmp_path / "f.vdb").stat().st_size > 0
    else:
        with pytest.raises(acmlbm.NotBuiltError):
            domain.export_vdb(tmp_path / "f.vdb")


def test_step_progress_callback_and_early_stop(domain):
    calls = []
    assert domain.step(20, progress=lambda done, n: calls.append((done, n)), every=5) == 20
    assert calls == [(5, 20), (10, 20), (15, 20), (20, 20)]
    assert domain.step(20, progress=lambda done, n: done >= 8, every=4) == 8
    assert domain.stats().step == 28


def test_the_gil_is_released_while_stepping():
    """Another Python thread runs while a step is in the library."""
    with acmlbm.Domain((48, 48, 48), viscosity=0.05, backend="cpu") as d:
        d.threads = 1
        ticks = [0]
        done = threading.Event()

        def spin():
            while not done.is_set():
                ticks[0] += 1

        t = threading.Thread(target=spin)
        t.start()
        try:
            start = ticks[0]
            d.step(10)  # about 0.1-1 s on one core
            during = ticks[0] - start
        finally:
            done.set()
            t.join()
        # with the GIL held for the call, the spinning thread could not count at all
        # (a switch interval of 5 ms would give it at most a tick or two)
        assert during > 1000


def test_closed_domain_refuses_calls():
    d = acmlbm.Domain((4, 4, 4), viscosity=0.1, backend="cpu")
    d.close()
    d.close()  # idempotent
    assert d.closed and "closed" in repr(d)
    with pytest.raises(acmlbm.BadStateError, match="closed"):
        d.step(1)


def test_cuda_calls_on_a_cpu_domain_say_why(domain):
    with pytest.raises((acmlbm.UnsupportedError, acmlbm.NotBuiltError)) as e:
        domain.step_async(1)
    assert e.value.message
    with pytest.raises((acmlbm.UnsupportedError, acmlbm.NotBuiltError)):
        domain.step_prepare(4)
    with pytest.raises((acmlbm.UnsupportedError, acmlbm.NotBuiltError)):
        domain.graphs_recorded
    with pytest.raises((acmlbm.UnsupportedError, acmlbm.NotBuiltError)):
        domain.device_fields()


def test_handle_is_the_c_pointer(domain):
    assert isinstance(domain.handle, int) and domain.handle != 0
    assert ctypes.c_void_p(domain.handle).value == domain._h.value
