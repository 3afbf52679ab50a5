"""Rendering and writing: Jinja2 environment, deterministic output, write-if-changed."""

from __future__ import annotations

import os
import sys

import jinja2

TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
# Split so that this file is not itself taken for generated code.
MARKER = "@" + "generated"


class TemplateFailure(Exception):
    pass


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
