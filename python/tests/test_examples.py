"""The examples of python/examples run (small sizes) and say what they should."""
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def run(name, *args, cwd):
    r = subprocess.run([sys.executable, str(EXAMPLES / name), *args], cwd=cwd,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_cavity(tmp_path):
    out = run("cavity.py", "--size", "12", "--steps", "60", "--backend", "cpu", "--out",
              "c.png", cwd=tmp_path)
    assert "step 60/60" in out
    assert (tmp_path / "c.png").exists() or "matplotlib is not installed" in out


def test_wind_tunnel_prints_drag(tmp_path):
    out = run("wind_tunnel.py", "--size", "6", "--steps", "100", "--every", "50",
              "--backend", "cpu", cwd=tmp_path)
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows] == ["50", "100"]
    assert float(rows[-1][1]) > 0  # drag along the wind


def test_smoke_frames(tmp_path):
    out = run("smoke_vdb.py", "--size", "16", "--frames", "2", "--steps-per-frame", "10",
              "--backend", "cpu", "--out", "frames", cwd=tmp_path)
    files = sorted(p.name for p in (tmp_path / "frames").iterdir())
    assert len(files) == 2 and files[0].startswith("smoke.0000.")
    assert "frame 1: step 20" in out


def test_gpu_example_says_why_without_a_gpu(tmp_path):
    import acmlbm
    if acmlbm.backend_available("cuda"):
        pytest.skip("a GPU is here: the example runs in earnest (test_dlpack covers it)")
    assert "no CUDA device" in run("gpu_torch.py", cwd=tmp_path)
