"""Generates the cffi extension's C source from include/mq.h and native/mqpy.h.

The cdef is what the C preprocessor makes of the real headers (never a hand-copied list), plus:
- the integer and string constants of mq.h (from ``cc -dM``: the preprocessor's own list);
- one wrapper ``mqw_<name>`` per function returning ``mq_status``, which copies
  ``mq_last_error()`` into the caller's per-thread buffer in the same native call (mq.h:
  "a small C wrapper that calls the function and, on failure, copies mq_last_error() is the
  safe shape"), and, for a function with a ``wait_ms`` parameter, counts the call in
  ``mqpy_blocked_calls()`` while it may wait. Wrappers are generated from the parsed
  declarations, so they cannot drift.

Usage: gen_cffi.py --cc CC --include DIR --native DIR --out FILE.c
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import tempfile

import cffi
import pycparser
from pycparser import c_ast, c_generator

# What cffi already knows; pycparser needs them spelled out to parse.
FAKE_TYPEDEFS = """
typedef unsigned long size_t; typedef long ssize_t; typedef long intptr_t;
typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t;
typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
"""

CALLBACKS = [
    ("int", "_mqpy_py_handler", "void *user, const mq_message *msg"),
    ("void", "_mqpy_py_user_free", "void *user"),
    ("void", "_mqpy_py_done", "void *user, int status, const char *err"),
    ("void", "_mqpy_py_rebalance", "void *user, mq_member *member, int64_t generation"),
    (
        "void",
        "_mqpy_py_assignor",
        "void *user, int32_t partitions, const char *const *member_ids, int32_t member_count, "
        "int32_t *owner_out",
    ),
]

SKIP_MACROS = {"MQ_H", "MQ_API", "MQ_STATIC", "MQ_BUILDING"}


def preprocess(cc: list[str], header: str, include: list[str], extra: list[str]) -> str:
    """Runs the preprocessor with empty system headers: cffi knows size_t and the intN_t."""
    with tempfile.TemporaryDirectory() as fake:
        for name in ("stddef.h", "stdint.h"):
            open(os.path.join(fake, name), "w").close()
        cmd = [*cc, "-E", "-P", "-nostdinc", "-I", fake, "-DMQ_STATIC"]
        cmd += [f"-I{d}" for d in include] + extra + [header]
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def constants(cc: list[str], header: str) -> list[str]:
    out = preprocess(cc, header, [], ["-dM"])
    lines = []
    for line in out.splitlines():
        m = re.match(r"#define (MQ_[A-Z0-9_]+) (.+)$", line)
        if not m or m.group(1) in SKIP_MACROS:
            continue
        name, value = m.groups()
        if value.startswith('"'):
            lines.append(f"static const char *const {name};")
        else:
            lines.append(f"#define {name} ...")
    return lines


def status_functions(decls: str) -> list[tuple[str, list[str], list[str]]]:
    """(name, parameter declarations, parameter names) of every function returning mq_status."""
    ast = pycparser.CParser().parse(FAKE_TYPEDEFS + decls)
    gen = c_generator.CGenerator()
    found = []
    for node in ast.ext:
        if not (isinstance(node, c_ast.Decl) and isinstance(node.type, c_ast.FuncDecl)):
            continue
        ret = node.type.type
        if not (isinstance(ret, c_ast.TypeDecl) and ret.type.names == ["mq_status"]):
            continue
        params = node.type.args.params if node.type.args else []
        if len(params) == 1 and gen.visit(params[0]) == "void":
            params = []
        decl_texts, names = [], []
        for p in params:
            if not p.name:
                raise SystemExit(f"gen_cffi: {node.name} has an unnamed parameter")
            decl_texts.append(gen.visit(p))
            names.append(p.name)
        found.append((node.name, decl_texts, names))
    return found


def wrapper_name(name: str) -> str:
    return "mqw_" + name[len("mq_") :]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--native", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    cc = shlex.split(args.cc)
    mq_h = os.path.join(args.include, "mq.h")
    mqpy_h = os.path.join(args.native, "mqpy.h")

    mq_decls = preprocess(cc, mq_h, [], [])
    mqpy_decls = preprocess(cc, mqpy_h, [args.include], [])
    funcs = status_functions(mq_decls + mqpy_decls)
    wrapped = [f for f in funcs if f[0].startswith("mq_")]

    cdef = [mq_decls, mqpy_decls, *constants(cc, mq_h)]
    source = ['#include "mq.h"', '#include "mqpy.h"']
    for ret, name, params in CALLBACKS:
        cdef.append(f'extern "Python" {ret} {name}({params});')
        source.append(f"static {ret} {name}({params});")
    for name, decls, names in wrapped:
        params = ", ".join([*decls, "mqpy_ctx *ctx"])
        cdef.append(f"int {wrapper_name(name)}({params});")
        call = f"mq_status s = {name}({', '.join(names)});"
        fails = "s != MQ_OK"
        if name.endswith("_async"):
            # Pending calls count as blocked until their done (mqpy_done) takes them off.
            call = (
                "atomic_fetch_add(&g_blocked, 1);\n"
                f"    {call}\n"
                "    if (s != MQ_PENDING) atomic_fetch_sub(&g_blocked, 1);"
            )
            fails = "s != MQ_OK && s != MQ_PENDING"
        elif "wait_ms" in names:
            # mqpy_blocked_calls(): the tests' way to know a call is waiting in C.
            call = (
                "if (wait_ms) atomic_fetch_add(&g_blocked, 1);\n"
                f"    {call}\n"
                "    if (wait_ms) atomic_fetch_sub(&g_blocked, 1);"
            )
        source.append(
            f"static int {wrapper_name(name)}({params})\n"
            f"{{\n    {call}\n"
            f"    if ({fails}) set_err(ctx, mq_last_error());\n    return (int)s;\n}}"
        )
    with open(os.path.join(args.native, "mqpy.c")) as f:
        helpers = f.read()
    # The helpers define set_err, which the wrappers use: they come first.
    source.insert(len(CALLBACKS) + 2, helpers)

    ffi = cffi.FFI()
    ffi.cdef("\n".join(cdef))
    ffi.set_source("mq._mq_cffi", "\n".join(source))
    ffi.emit_c_code(args.out)


if __name__ == "__main__":
    main()
