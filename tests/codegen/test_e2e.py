"""The generator's argument and result kinds, end to end in C: the fixture ops of
fixture_e2e.yaml (kernels in fixture_e2e.c) are generated next to the repository's ops, built
against the library's objects in build/, and the generated per-op tests (tests/unit/test_ops.c:
gradcheck and gradgradcheck, variants, NULL arguments, error inputs, no leaks) run on them.
Needs `make lib` first (skipped otherwise); takes a few seconds of compiling."""

import glob
import os
import shutil
import subprocess

import pytest
from helpers import REPO
from test_gen import gen, spec_copy

HERE = os.path.dirname(os.path.abspath(__file__))
BLIS = "/usr/lib/x86_64-linux-gnu/blis-serial"


def read(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


def test_fixture_ops_end_to_end(tmp_path):
    build = os.path.join(REPO, "build")
    objs = [o for o in glob.glob(os.path.join(build, "runtime", "**", "*.o"), recursive=True) +
            glob.glob(os.path.join(build, "kernels", "**", "*.o"), recursive=True)]
    cc = shutil.which("gcc") or shutil.which("cc")
    if not objs or cc is None or not os.path.exists("/usr/include/criterion/criterion.h"):
        pytest.skip("needs `make lib` (build/runtime, build/kernels objects), a C compiler and Criterion")
    spec, _ = spec_copy(tmp_path, read("fixture_e2e.yaml"), read("fixture_e2e_derivatives.yaml"))
    out = tmp_path / "out"
    r = gen(spec, out)
    assert r.returncode == 0, r.stderr
    gdir = os.path.join(out, "generated")
    flags = ["-std=c11", "-O0", "-g", "-fopenmp-simd", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror"]
    inc = [f"-I{gdir}/include", f"-I{gdir}", f"-I{REPO}/include", f"-I{REPO}/runtime", f"-I{REPO}/kernels/cpu",
           "-I/usr/include/x86_64-linux-gnu/blis-serial"]
    lib_c = sorted(glob.glob(os.path.join(gdir, "*.c"))) + [os.path.join(HERE, "fixture_e2e.c")]
    built = []
    for c in lib_c:
        o = os.path.join(tmp_path, os.path.basename(c) + ".o")
        r = subprocess.run([cc] + flags + inc + ["-include", os.path.join(HERE, "fixture_e2e.h"), "-c", c, "-o", o],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"{c}:\n{r.stderr}"
        built.append(o)
    exe = os.path.join(tmp_path, "test_ops")
    r = subprocess.run([cc] + flags + [f"-I{gdir}/include", f"-I{REPO}/include", f"-I{REPO}/tests/unit",
                                       os.path.join(REPO, "tests/unit/test_ops.c"),
                                       os.path.join(gdir, "tests/op_cases.c")] + built + objs +
                       ["-o", exe, "-lcriterion", f"-L{BLIS}", f"-Wl,-rpath,{BLIS}", "-lblis", "-lm", "-lpthread"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([exe, "-j2"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    assert "Failing: 0" in r.stdout + r.stderr
