"""Rendering, formatting and writing: Jinja2 environment, the pinned clang-format, write-if-changed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import jinja2

CODEGEN_DIR = os.path.dirname(os.path.abspath(__file__))
TEMPLATE_DIR = os.path.join(CODEGEN_DIR, "templates")
# The repository's style, whatever --root says: generated C looks the same wherever it is made.
STYLE_FILE = os.path.join(os.path.dirname(CODEGEN_DIR), ".clang-format")
# Pinned: another major version formats differently, and check-generated would fail.
CLANG_FORMAT_MAJOR = 14
CLANG_FORMAT_NAMES = ("clang-format-14", "clang-format")
# Split so that this file is not itself taken for generated code.
MARKER = "@" + "generated"


class TemplateFailure(Exception):
    pass


class FormatFailure(Exception):
    """clang-format 14 is missing or failed; the message is the whole one-line report."""


def _c_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["c_string"] = _c_string
    env.globals["marker"] = MARKER
    return env


def render(env: jinja2.Environment, template: str, **context) -> str:
    try:
        text = env.get_template(template).render(**context)
    except jinja2.TemplateError as e:
        line = getattr(e, "lineno", None)
        if line is None:  # runtime errors (undefined fields): find the template frame
            tb = sys.exc_info()[2]
            while tb is not None:
                if tb.tb_frame.f_code.co_filename.endswith(".j2"):
                    line = tb.tb_lineno
                tb = tb.tb_next
        raise TemplateFailure(f"codegen/templates/{template}:{line or '?'}: {e.message if hasattr(e, 'message') else e}") from None
    # LF only, no trailing spaces, exactly one final newline: stable bytes for check-generated
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


def write_if_changed(path: str, text: str) -> bool:
    """Writes `text` unless the file already holds it, so make rebuilds only what changed."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            if f.read() == text:
                return False
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(tmp, path)
    return True


# ---------------------------------------------------------------- clang-format

def _major_version(exe: str):
    """Major version that `exe --version` reports, or None."""
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    m = re.search(r"clang-format version (\d+)\.", out)
    return int(m.group(1)) if m else None


def find_clang_format() -> str:
    """Path of clang-format 14, or FormatFailure."""
    for name in CLANG_FORMAT_NAMES:
        exe = shutil.which(name)
        if exe and _major_version(exe) == CLANG_FORMAT_MAJOR:
            return exe
    raise FormatFailure(f"gen.py: clang-format {CLANG_FORMAT_MAJOR} (Debian package "
                        f"clang-format-{CLANG_FORMAT_MAJOR}) is required to format generated/")


def clang_format(exe: str, rel: str, text: str) -> str:
    """`text`, formatted with the repository's .clang-format; `rel` names it in errors."""
    cmd = [exe, f"--style=file:{STYLE_FILE}", f"--assume-filename={rel}"]
    proc = subprocess.run(cmd, input=text, capture_output=True, text=True)
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["no message"])[0]
        raise FormatFailure(f"gen.py: clang-format failed on {rel}: {first}")
    return proc.stdout


def format_c_files(files: dict) -> dict:
    """Returns `files` ({relative path: text}) with every .c and .h file run through clang-format,
    in parallel (one process per file)."""
    names = [rel for rel in sorted(files) if rel.endswith((".c", ".h"))]
    if not names:
        return dict(files)
    exe = find_clang_format()
    with ThreadPoolExecutor(max_workers=min(len(names), os.cpu_count() or 4)) as pool:
        formatted = list(pool.map(lambda rel: clang_format(exe, rel, files[rel]), names))
    out = dict(files)
    out.update(zip(names, formatted))
    return out
