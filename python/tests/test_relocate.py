"""A moved install still finds its library and its OpenVDB module: the package folder
copied elsewhere and imported from there, as a game or a DCC tool that ships it in
its own folder would."""
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import acmlbm

CHILD = textwrap.dedent("""
    import acmlbm, pathlib, sys
    moved = pathlib.Path(sys.argv[1]).resolve()
    assert pathlib.Path(acmlbm.__file__).resolve().is_relative_to(moved), acmlbm.__file__
    d = acmlbm.Domain((8, 8, 8), viscosity=0.1, backend="cpu")
    d.step(2)
    vdb = acmlbm.vdb_available()
    if vdb:
        d.export_vdb(sys.argv[2])
    maps = open("/proc/self/maps").read().split()
    libs = sorted({p for p in maps if p.endswith(("libacmlbm.so", "acmlbm-vdb.so"))})
    print(vdb)
    print("\\n".join(libs))
""")


def test_a_moved_package_loads_its_own_files(tmp_path):
    src = pathlib.Path(acmlbm.__file__).resolve().parent
    if not (src / "libacmlbm.so").exists():
        import pytest
        pytest.skip("the package under test was not installed with its library "
                    "(ACMLBM_LIBRARY points elsewhere)")
    moved = tmp_path / "game" / "python"
    shutil.copytree(src, moved / "acmlbm")
    env = {k: v for k, v in os.environ.items()
           if k not in ("ACMLBM_LIBRARY", "ACMLBM_VDB_MODULE", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = str(moved)
    r = subprocess.run([sys.executable, "-c", CHILD, str(moved), str(tmp_path / "f.vdb")],
                       env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split()
    vdb, libs = lines[0] == "True", lines[1:]
    assert libs and all(pathlib.Path(p).resolve().is_relative_to(moved.resolve())
                        for p in libs), libs
    if vdb:
        assert any(p.endswith("acmlbm-vdb.so") for p in libs)
        assert (tmp_path / "f.vdb").stat().st_size > 0
    assert vdb == acmlbm.vdb_available()
