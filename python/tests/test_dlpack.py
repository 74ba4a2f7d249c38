"""Device arrays: the DLPack capsule and its deleter, proven on host memory here
(NumPy consumes it), and on a GPU the fields read by PyTorch and CuPy without a
copy (pointer identity), when the library has CUDA and a device is present."""
import gc
import weakref

import numpy as np
import pytest

import acmlbm
from acmlbm.dlpack import KDL_CPU, DeviceArray


class Owner:
    closed = False


def test_capsule_shares_memory_and_its_deleter_releases_the_owner():
    buf = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    owner = Owner()
    gone = weakref.ref(owner)
    view = DeviceArray(owner, buf.ctypes.data, buf.shape, 0, device_type=KDL_CPU)
    assert view.__dlpack_device__() == (KDL_CPU, 0)
    a = np.from_dlpack(view)
    assert a.ctypes.data == buf.ctypes.data  # no copy
    assert a.shape == (2, 3, 4) and a.dtype == np.float32 and a[1, 2, 3] == 23
    del owner, view
    gc.collect()
    assert gone() is not None  # the array from the capsule still holds it
    del a
    gc.collect()
    assert gone() is None  # the consumer called the deleter


def test_an_unconsumed_capsule_releases_the_owner():
    buf = np.zeros(4, np.float32)
    owner = Owner()
    gone = weakref.ref(owner)
    cap = DeviceArray(owner, buf.ctypes.data, (4,), 0, device_type=KDL_CPU).__dlpack__()
    del owner
    gc.collect()
    assert gone() is not None
    del cap
    gc.collect()
    assert gone() is None


def test_a_closed_owner_refuses_to_export():
    o = Owner()
    view = DeviceArray(o, 1234, (1,), 0, device_type=KDL_CPU)
    o.closed = True
    with pytest.raises(acmlbm.BadStateError):
        view.__dlpack__()


cuda = pytest.mark.skipif(not acmlbm.backend_available("cuda"),
                          reason="no CUDA device, or a library built without CUDA")


def _gpu_domain():
    d = acmlbm.Domain((32, 24, 16), viscosity=0.02, backend="cuda")
    d.set_face("y_max", "wall", velocity=(0.05, 0, 0))
    d.set_face("y_min", "wall")
    d.step(50)
    return d


@cuda
def test_torch_reads_the_gpu_velocity_without_a_copy():
    torch = pytest.importorskip("torch")
    with _gpu_domain() as d:
        rho, vel = d.device_fields()
        assert vel.__cuda_array_interface__["stream"] == d.stream
        t = torch.from_dlpack(vel)
        assert t.data_ptr() == vel.ptr and t.is_cuda and tuple(t.shape) == (16, 24, 32, 3)
        host = d.velocity()
        assert np.array_equal(t.cpu().numpy(), host)
        assert torch.from_dlpack(rho).data_ptr() == rho.ptr


@cuda
def test_cupy_reads_the_gpu_fields_without_a_copy():
    cupy = pytest.importorskip("cupy")
    with _gpu_domain() as d:
        rho, vel = d.device_fields()
        a = cupy.asarray(vel)  # the CUDA array interface
        b = cupy.from_dlpack(rho)
        assert a.data.ptr == vel.ptr and b.data.ptr == rho.ptr
        assert np.array_equal(cupy.asnumpy(a), d.velocity())
        assert np.array_equal(cupy.asnumpy(b), d.density())


@cuda
def test_a_tensor_keeps_the_domain_alive():
    torch = pytest.importorskip("torch")
    d = _gpu_domain()
    ref = weakref.ref(d)
    t = torch.from_dlpack(d.device_fields()[1])
    expect = d.velocity()
    del d
    gc.collect()
    assert ref() is not None
    assert np.array_equal(t.cpu().numpy(), expect)
    del t
    gc.collect()
    assert ref() is None


@cuda
def test_smoke_density_into_a_cupy_array():
    cupy = pytest.importorskip("cupy")
    with _gpu_domain() as d:
        k = acmlbm.Smoke(d, capacity=1000)
        k.add_emitter("sphere", centre=(16, 12, 8), radius=3, rate=20)
        d.step(10)
        out = cupy.zeros((32, 48, 64), cupy.float32)
        k.device_density(2, out)
        assert float(out.sum()) / 8 == pytest.approx(k.info().alive, rel=1e-4)
        assert np.allclose(cupy.asnumpy(out), k.density(2), atol=1e-5)


@cuda
def test_async_steps_on_the_callers_stream():
    torch = pytest.importorskip("torch")
    s = torch.cuda.Stream()
    with _gpu_domain() as d, acmlbm.Domain((32, 24, 16), viscosity=0.02, backend="cuda") as e:
        e.set_face("y_max", "wall", velocity=(0.05, 0, 0))
        e.set_face("y_min", "wall")
        e.stream = s.cuda_stream
        assert e.stream == s.cuda_stream
        e.step_async(50)
        e.synchronize()
        assert e.stats().step == 50
        vel = e.device_fields()[1]
        assert vel.__cuda_array_interface__["stream"] == s.cuda_stream
        with torch.cuda.stream(s):
            t = torch.from_dlpack(vel)  # on the domain's own stream: no wait asked
            assert np.array_equal(t.cpu().numpy(), d.velocity())  # the same 50 steps
