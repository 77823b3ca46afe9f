#!/usr/bin/env python3
"""Extracts from the library's public headers the prototypes rust/shmem-sys declares, as data.

    extract_decls.py <include dir> [-o shmem_decls.txt]

<include dir> is the folder holding shmem.h, shmemx.h and aclshmem.h: an installed tree's
include/, or cpp/include of the source tree (the same files). The output (shmem_decls.txt beside
this script by default) is what the crate's test compares its declarations with, in the format
of rust/sys-decl's data files, functions only:

    [functions]  return type | name | parameter type, parameter type, ...

The headers are read as a C compiler reads them: a translation unit including the three is run
through the C preprocessor ($CC, else cc, with -E -P), so the type tables' X-macros are
expanded, and every function the result declares at file scope is written, sorted by name
(more than the crate binds: the check asks of each binding that the header declare it so, not
the other way round). Types are normalised as the other crates' data files write them:
parameter names dropped, single spaces, `const` kept where it qualifies a pointee (a `const` on
a value parameter, which no caller sees, is dropped), a pointer written `T *` / `T **`, a
function pointer `R (*)(T, ...)`, `_Bool` as `bool`. A declaration this script cannot read
stops it, naming the declaration. Only the headers' facts are written, never their text.
"""

import argparse
import os
import pathlib
import re
import subprocess
import sys

HEADERS = ["shmem.h", "shmemx.h", "aclshmem.h"]

# Words that are part of a C type, never a parameter's name.
TYPE_WORDS = {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
              "_Bool", "bool", "const", "volatile", "struct", "enum", "_Complex"}


def fail(msg):
    sys.exit(f"extract_decls.py: {msg}")


def preprocess(include):
    source = "".join(f"#include <{h}>\n" for h in HEADERS)
    cc = os.environ.get("CC") or "cc"
    try:
        out = subprocess.run([cc, "-E", "-P", "-std=gnu11", "-I", str(include), "-x", "c", "-"],
                             input=source, capture_output=True, text=True, check=False)
    except OSError as e:
        fail(f"{cc}: {e}")
    if out.returncode != 0:
        fail(f"{cc} -E on {', '.join(HEADERS)} from {include}:\n{out.stderr}")
    # Pragmas (`#pragma GCC visibility push(default)`) are no declarations.
    return "\n".join(l for l in out.stdout.splitlines() if not l.lstrip().startswith("#"))


def strip_attributes(text):
    """Removes every __attribute__((...)) and __extension__, parentheses balanced."""
    out, i = [], 0
    while True:
        at = text.find("__attribute__", i)
        if at < 0:
            out.append(text[i:])
            break
        out.append(text[i:at])
        j = text.index("(", at)
        depth = 0
        while True:
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
            if depth == 0:
                break
        i = j
    return "".join(out).replace("__extension__", "")


def statements(text):
    """File-scope statements ending in ';', with anything in braces (bodies, struct and enum
    definitions, extern "C" blocks are not in C) kept as a marker so those are recognised."""
    out, cur, depth = [], [], 0
    for ch in text:
        if ch == "{":
            depth += 1
            if depth == 1:
                cur.append("{}")
            continue
        if ch == "}":
            depth -= 1
            if depth == 0 and "".join(cur).lstrip().startswith(("static", "inline")):
                out.append("".join(cur))  # a definition: no ';' follows
                cur = []
            continue
        if depth:
            continue
        if ch == ";":
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    return [" ".join(s.split()) for s in out if s.strip()]


def split_top(params):
    """Splits a parameter list at the commas outside parentheses."""
    parts, cur, depth = [], [], 0
    for ch in params:
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts]


def norm_type(words, stars, where):
    """A type from its words (base and qualifiers) and its pointer level, normalised."""
    words = ["bool" if w == "_Bool" else w for w in words]
    if not words:
        fail(f"{where}: a parameter without a type")
    if stars == 0:
        words = [w for w in words if w != "const"]
    base = " ".join(words)
    return f"{base} {'*' * stars}" if stars else base


def norm_param(param, where):
    if param == "...":
        return param
    fn = re.fullmatch(r"(.+?)\(\s*\*\s*\w*\s*\)\s*\((.*)\)", param)
    if fn:
        ret = norm_param(fn.group(1).strip(), where)
        inner = fn.group(2).strip()
        args = [] if inner in ("", "void") else [norm_param(p, where) for p in split_top(inner)]
        return f"{ret} (*)({', '.join(args)})"
    if "[" in param or "(" in param:
        fail(f"{where}: cannot read the parameter '{param}'")
    tokens = re.findall(r"\w+|\*", param)
    stars = tokens.count("*")
    words = [t for t in tokens if t != "*"]
    # A trailing name: the last word, when it is no type word and another word names the type.
    last_is_word = tokens and tokens[-1] != "*"
    if last_is_word and len(words) > 1 and words[-1] not in TYPE_WORDS:
        named = [w for w in words[:-1] if w not in ("const", "volatile")]
        if named:
            words = words[:-1]
    return norm_type(words, stars, where)


def function(stmt):
    """(name, return type, [parameter types]) of a function declaration, else None."""
    if stmt.startswith(("typedef", "static", "inline")) or "{}" in stmt:
        return None
    # A name in parentheses, which a function-like macro of the same name cannot expand:
    # `int(shmem_get_uniqueid)(shmemx_uniqueid_t *uid)`.
    stmt = re.sub(r"^([\w\s*]+?)\s*\(\s*(\w+)\s*\)\s*\(", r"\1 \2(", stmt)
    m = re.fullmatch(r"(?:extern\s+)?(?:_Noreturn\s+)?(.+?)\b(\w+)\s*\((.*)\)", stmt)
    if not m:
        return None  # a variable, or a struct or enum declaration
    ret, name, params = m.group(1).strip(), m.group(2), m.group(3).strip()
    if not ret or "(" in ret:
        fail(f"cannot read the declaration '{stmt}'")
    where = name
    ret_tokens = re.findall(r"\w+|\*", ret)
    ret = norm_type([t for t in ret_tokens if t != "*"], ret_tokens.count("*"), where)
    args = [] if params in ("", "void") else [norm_param(p, where) for p in split_top(params)]
    return name, ret, args


def main():
    here = pathlib.Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("include", type=pathlib.Path)
    ap.add_argument("-o", "--output", type=pathlib.Path, default=here / "shmem_decls.txt")
    args = ap.parse_args()
    for h in HEADERS:
        if not (args.include / h).is_file():
            fail(f"{args.include}: no {h}")
    text = strip_attributes(preprocess(args.include))
    functions = {}
    for stmt in statements(text):
        f = function(stmt)
        if f is None:
            continue
        name, ret, params = f
        line = f"{ret} | {name} | {', '.join(params)}"
        if functions.get(name, line) != line:
            fail(f"{name} is declared twice, differently:\n  {functions[name]}\n  {line}")
        functions[name] = line
    if not functions:
        fail(f"no function declared by {', '.join(HEADERS)} in {args.include}")
    out = [
        "# libshmem.so's public C API as data: every function <shmem.h>, <shmemx.h> and",
        "# <aclshmem.h> declare, their prototypes as the C preprocessor leaves them, sorted by name.",
        "# rust/shmem-sys binds part of it; its tests compare each binding's Rust types with the",
        "# line of its symbol, and this file with the headers. Regenerate (never edit by hand):",
        "#   python3 rust/shmem-sys/extract_decls.py cpp/include",
        "# and run `cargo test -p shmem-sys`.",
        "#",
        "# [functions]  return type | name | parameter types, comma-separated",
        "",
        "[functions]",
    ] + [functions[n] for n in sorted(functions)]
    args.output.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
