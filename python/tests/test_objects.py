"""Meshes, solids, smokes and the autotuner; lifetimes: what belongs to a domain
dies with it, whatever order Python frees things in."""
import gc
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import acmlbm
from conftest import sphere_mesh


def test_mesh_from_arrays_and_bytes(sphere, tmp_path):
    info = sphere.info()
    assert info["closed"] and info["triangle_count"] == 320
    assert info["volume"] == pytest.approx(4 / 3 * np.pi * 27, rel=0.05)
    assert sphere.vertices().shape == (162, 3) and sphere.triangles().dtype == np.uint32
    obj = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"
    m = acmlbm.Mesh.from_bytes(obj.encode(), format="obj")
    assert m.info()["triangle_count"] == 1
    (tmp_path / "t.obj").write_text(obj)
    assert acmlbm.Mesh.load(tmp_path / "t.obj").info()["vertex_count"] == 3


def test_hostile_mesh_is_refused_with_a_message():
    with pytest.raises(acmlbm.BadFormatError) as e:
        acmlbm.Mesh.from_bytes(b"solid x\nfacet normal 0 0 1\nouter loop\nvertex 1 2\n")
    assert e.value.message
    with pytest.raises(acmlbm.FileError):
        acmlbm.Mesh.load("/nonexistent/mesh.stl")
    with pytest.raises(acmlbm.OutOfRangeError):
        acmlbm.Mesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 7]])


def test_solid_in_a_stream_feels_drag(sphere):
    with acmlbm.Domain((32, 16, 16), viscosity=0.05, backend="cpu") as d:
        d.init_uniform(1.0, (0.03, 0, 0))
        s = acmlbm.Solid(d, sphere, position=(16, 8, 8))
        info = s.info()
        assert info.motion == acmlbm.Motion.STATIC and info.sample_count > 100
        assert s.samples().shape == (info.sample_count, 3)
        d.step(20)
        force, torque = s.force()
        assert force[0] > 0 and abs(force[0]) > 10 * abs(force[1])
        assert s.contains((16, 8, 8)) and not s.contains((2, 2, 2))
        occ = s.occupancy()
        assert occ.shape == d.shape and occ[8, 8, 16] == 1 and occ.sum() > 50
        s.state = acmlbm.SolidState((17, 8, 8), (1, 0, 0, 0), (0, 0, 0), (0, 0, 0))
        assert s.state.position == (17.0, 8.0, 8.0)
        with pytest.raises(acmlbm.OutOfRangeError):
            s.set_state(velocity=(0.01, 0, 0))  # a static solid takes no velocity
        with pytest.raises(TypeError, match="unknown solid option"):
            acmlbm.Solid(d, sphere, colour="red")


def test_free_body_falls(sphere):
    with acmlbm.Domain((16, 16, 32), viscosity=0.1, backend="cpu") as d:
        d.set_face("z_min", "wall")
        d.set_face("z_max", "wall")
        s = acmlbm.Solid(d, sphere, position=(8, 8, 20), motion="free", density=3.0,
                         gravity=(0, 0, -1e-4))
        d.step(30)
        assert s.state.velocity[2] < 0 and s.state.position[2] < 20


def test_caller_samples():
    pts = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)
    with acmlbm.Domain((12, 12, 12), viscosity=0.1, backend="cpu") as d:
        s = acmlbm.Solid(d, points=pts * 2, areas=np.full(6, 4.0), position=(6, 6, 6))
        assert s.info().sample_count == 6
        with pytest.raises(acmlbm.UnsupportedError):
            s.contains((6, 6, 6))


def test_smoke_emits_counts_and_exports(tmp_path):
    with acmlbm.Domain((16, 16, 16), viscosity=0.05, backend="cpu") as d:
        d.init_uniform(1.0, (0.02, 0.01, 0))
        smoke = acmlbm.Smoke(d, capacity=5000, seed=3)
        smoke.add_emitter("sphere", centre=(8, 8, 8), radius=2, rate=50, lifetime=100)
        smoke.add_emitter("box", lo=(1, 1, 1), hi=(3, 3, 3), rate=10)
        d.step(10)
        info = smoke.info()
        assert info.alive == 600 and info.emitters == 2
        p = smoke.particles()
        assert p.shape == (600, 3) and np.all((p > -1) & (p < 17))
        rho = smoke.density(subdivisions=2)
        assert rho.shape == (32, 32, 32)
        assert rho.sum() / 8 == pytest.approx(600, rel=1e-5)
        smoke.export(tmp_path / "p.ply")
        smoke.export(tmp_path / "p.vtp", format="vtp")
        smoke.export_density(tmp_path / "s.vti", 1)
        assert (tmp_path / "p.ply").read_bytes().startswith(b"ply")
        with pytest.raises(ValueError, match="emitter shape"):
            smoke.add_emitter("cone", rate=1)
        with pytest.raises(acmlbm.OutOfRangeError):
            smoke.density(subdivisions=99)


def test_checkpoint_brings_solids_and_smokes_back(sphere, tmp_path):
    with acmlbm.Domain((24, 16, 16), viscosity=0.05, backend="cpu") as d:
        d.init_uniform(1.0, (0.03, 0, 0))
        acmlbm.Solid(d, sphere, position=(12, 8, 8))
        acmlbm.Smoke(d, capacity=100).add_emitter("box", lo=(1, 1, 1), hi=(2, 2, 2), rate=2)
        d.step(4)
        d.save(tmp_path / "c.acm")
        with acmlbm.Domain.load(tmp_path / "c.acm", backend="cpu") as twin:
            (s,), (k,) = twin.solids(), twin.smokes()
            d.step(3)
            twin.step(3)
            assert np.array_equal(s.force()[0], d.solids()[0].force()[0])
            assert k.info().alive == d.smokes()[0].info().alive == 14


def test_a_solid_keeps_its_domain_alive(sphere):
    d = acmlbm.Domain((16, 16, 16), viscosity=0.05, backend="cpu")
    s = acmlbm.Solid(d, sphere, position=(8, 8, 8))
    del d
    gc.collect()
    s.domain.step(2)  # the domain is still there
    assert s.info().sample_count > 0


def test_a_solid_stays_in_its_domain_without_a_python_reference(sphere):
    with acmlbm.Domain((16, 16, 16), viscosity=0.05, backend="cpu") as d:
        acmlbm.Solid(d, sphere, position=(8, 8, 8))
        gc.collect()
        (s,) = d.solids()
        assert d.solids()[0] is s  # one Python object per solid while it lives
        s.close()
        assert d.solids() == []


def test_closing_the_domain_closes_its_solids_and_smokes(sphere):
    d = acmlbm.Domain((16, 16, 16), viscosity=0.05, backend="cpu")
    s = acmlbm.Solid(d, sphere, position=(8, 8, 8))
    k = acmlbm.Smoke(d, capacity=10)
    d.close()
    assert s.closed and k.closed
    with pytest.raises(acmlbm.BadStateError, match="domain was closed"):
        s.force()
    s.close()  # nothing left to free, and no crash
    k.close()


def test_solid_closed_before_its_domain(sphere):
    with acmlbm.Domain((16, 16, 16), viscosity=0.05, backend="cpu") as d:
        with acmlbm.Solid(d, sphere, position=(8, 8, 8)) as s:
            pass
        assert s.closed and d.solids() == []
        d.step(1)


def test_mesh_may_go_before_its_solids():
    with acmlbm.Domain((16, 16, 16), viscosity=0.05, backend="cpu") as d:
        m = acmlbm.Mesh(*sphere_mesh(3.0))
        s = acmlbm.Solid(d, m, position=(8, 8, 8))
        m.close()
        del m
        d.step(2)
        assert s.info().sample_count > 0


def test_garbage_cycles_free_in_any_order():
    """A domain and its solid in a reference cycle: the collector may finalise the
    domain first; the solid must then not free what the domain already freed. Run
    in a child process, so that a crash fails this test instead of the session."""
    code = textwrap.dedent("""
        import gc, acmlbm, numpy as np, sys
        sys.path.insert(0, %r)
        from conftest import sphere_mesh
        m = acmlbm.Mesh(*sphere_mesh(3.0))
        for i in range(20):
            d = acmlbm.Domain((16, 16, 16), viscosity=0.05, backend="cpu")
            s = acmlbm.Solid(d, m, position=(8, 8, 8))
            k = acmlbm.Smoke(d, capacity=10)
            d.cycle = (s, k)       # domain -> solid -> domain
            del d, s, k
            gc.collect()
        print("ok")
    """ % str(__import__("pathlib").Path(__file__).parent))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_autotune_reports_progress_and_can_be_cancelled(tmp_path):
    with acmlbm.Domain((32, 32, 32), viscosity=0.05, backend="cpu") as d:
        d.init_uniform(1.0, (0.02, 0, 0))
        before = d.populations()
        heard = []
        r = d.autotune(time_budget=2.0, window_steps=2, progress=heard.append)
        assert heard and heard[-1].done == len(heard) and heard[0].stage in ("fluid", "final")
        assert isinstance(r.best, acmlbm.Layout) and r.summary.entries == len(r.entries)
        assert str(r.best) == r.summary.best_layout
        assert "kernel" in r.summary.not_tuned  # a GPU parameter, on the CPU
        assert np.array_equal(d.populations(), before)  # the state is put back
        r.write_csv(tmp_path / "t.csv")
        assert (tmp_path / "t.csv").read_text().startswith("layout,stage,status")
        with pytest.raises(acmlbm.CancelledError):
            d.autotune(window_steps=2, progress=lambda p: True)

        def broken(p):
            raise RuntimeError("progress bar fell over")

        with pytest.raises(RuntimeError, match="fell over"):
            d.autotune(window_steps=2, progress=broken)
        d.autotune(window_steps=2, time_budget=1.0, apply=True)


def test_free_body_loads_and_motion_switches(sphere):
    with acmlbm.Domain((16, 16, 24), viscosity=0.1, backend="cpu") as d:
        s = acmlbm.Solid(d, sphere, position=(8, 8, 12), motion="prescribed", density=2.0)
        assert s.motion == acmlbm.Motion.PRESCRIBED
        s.set_state(velocity=(0, 0, 0.01))
        d.step(5)
        assert s.state.position[2] == pytest.approx(12.05)
        s.motion = "free"
        s.set_load(force=(0, 0, 1.0))  # a push along +z (mass about 226)
        d.step(10)
        assert s.motion == acmlbm.Motion.FREE and s.state.velocity[2] > 0.01
        s.motion = acmlbm.Motion.STATIC
        assert s.state.velocity == (0.0, 0.0, 0.0)
        with pytest.raises(acmlbm.OutOfRangeError):
            s.set_load(force=(float("nan"), 0, 0))


def test_smoke_vdb_export(tmp_path):
    with acmlbm.Domain((12, 12, 12), viscosity=0.05, backend="cpu") as d:
        k = acmlbm.Smoke(d, capacity=100)
        k.add_emitter("points", points=[[6, 6, 6], [3, 3, 3]], rate=2)
        d.step(3)
        assert k.info().alive == 6
        if acmlbm.vdb_available():
            k.export_vdb(tmp_path / "s.vdb", 2, velocity=True)
            assert (tmp_path / "s.vdb").stat().st_size > 0
        else:
            with pytest.raises(acmlbm.NotBuiltError):
                k.export_vdb(tmp_path / "s.vdb")


def test_slabs_in_one_process_step_as_one_domain():
    kw = dict(viscosity=0.05, backend="cpu", velocity=(0.01, 0.02, 0.03))
    with acmlbm.Domain((8, 8, 16), **kw) as one, \
            acmlbm.Domain((8, 8, 16), subdomains=2, **kw) as two:
        two.halo_overlap = 2
        assert two.halo_overlap == 2
        two.divergence_interval = 5
        assert two.divergence_interval == 5
        one.set_body_force((1e-5, 0, 0))
        two.set_body_force((1e-5, 0, 0))
        one.step(6)
        two.step(6)
        assert np.array_equal(one.populations(), two.populations())
