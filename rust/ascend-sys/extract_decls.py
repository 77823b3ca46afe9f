#!/usr/bin/env python3
"""Extracts from CANN's ACL headers the declarations rust/ascend-sys binds, as data.

    extract_decls.py <acl include dir> [--source TEXT] [-o acl_decls.txt]

<acl include dir> is the folder holding acl_rt.h, acl_base_rt.h and error_codes/ (the torch-npu
wheel's torch_npu/include/acl, or $ASCEND_HOME_PATH/include/acl). --source says in the output's
header which package the headers came from. The output (acl_decls.txt beside this script by
default) is what the crate's test compares its declarations with:

    [typedefs]   name | C definition            (enum types read "enum")
    [structs]    name | C type field, C type field, ...   (in declaration order)
    [functions]  return type | name | parameter type, parameter type, ...
    [constants]  name | C type | value          (enumerators: their enum; static const ints and
                                                 #defines: int)

Types are normalised: parameter names dropped, single spaces, `const` kept, a pointer written
`T *` / `T **`. Each name below must be declared exactly once with ACL_FUNC_VISIBILITY (or
defined once); anything missing or ambiguous stops the script with its name, so a CANN release
that changes one of them is noticed here. Only the headers' facts are written, never their text.
"""

import argparse
import pathlib
import re
import sys

# The ACL calls the library makes: the same list as the crate's `acl!` invocation.
FUNCTIONS = """
aclInit aclFinalize aclGetRecentErrMsg
aclrtGetDeviceCount aclrtGetDevice aclrtSetDevice aclrtResetDevice
aclrtGetCurrentContext aclrtSetCurrentContext aclrtDeviceGetBareTgid
aclrtDeviceCanAccessPeer aclrtDeviceEnablePeerAccess
aclrtMemGetAllocationGranularity aclrtReserveMemAddress aclrtReleaseMemAddress
aclrtMallocPhysical aclrtFreePhysical aclrtMapMem aclrtUnmapMem
aclrtMemExportToShareableHandle aclrtMemSetPidToShareableHandle
aclrtMemImportFromShareableHandle aclrtMemRetainAllocationHandle
aclrtIpcMemGetExportKey aclrtIpcMemSetImportPid aclrtIpcMemImportByKey aclrtIpcMemClose
aclrtMemGetAddressRange
aclrtMalloc aclrtFree aclrtMallocHost aclrtFreeHost
aclrtMemcpy aclrtMemcpyAsync aclrtMemset aclrtMemsetAsync
aclrtCreateStream aclrtDestroyStream aclrtSynchronizeStream aclrtSynchronizeStreamWithTimeout
aclrtSynchronizeDeviceWithTimeout
aclrtCreateEvent aclrtDestroyEvent aclrtRecordEvent aclrtStreamWaitEvent aclrtSynchronizeEvent
aclrtLaunchHostFunc
""".split()

# Handle and scalar typedefs the signatures use.
TYPEDEFS = """
aclError aclrtStream aclrtEvent aclrtContext aclrtDrvMemHandle aclrtHostFunc
""".split()

# Enum types the signatures and structs use (their size is the C enum's).
ENUMS = """
aclrtMemcpyKind aclrtMemMallocPolicy aclrtMemAttr aclrtMemLocationType aclrtMemAllocationType
aclrtMemHandleType aclrtMemGranularityOptions
""".split()

# Structs passed by pointer, inner ones first.
STRUCTS = ["aclrtMemLocation", "aclrtPhysicalMemProp"]

# Constants the library uses: enumerators and error codes.
CONSTANTS = """
ACL_MEMCPY_HOST_TO_HOST ACL_MEMCPY_HOST_TO_DEVICE ACL_MEMCPY_DEVICE_TO_HOST
ACL_MEMCPY_DEVICE_TO_DEVICE ACL_MEMCPY_DEFAULT
ACL_MEM_MALLOC_HUGE_FIRST ACL_HBM_MEM_HUGE ACL_MEM_LOCATION_TYPE_DEVICE
ACL_MEM_ALLOCATION_TYPE_PINNED ACL_MEM_HANDLE_TYPE_NONE
ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED
ACL_SUCCESS ACL_ERROR_INVALID_PARAM ACL_ERROR_UNINITIALIZE ACL_ERROR_REPEAT_INITIALIZE
ACL_ERROR_REPEAT_FINALIZE ACL_ERROR_INVALID_DEVICE
ACL_ERROR_RT_PARAM_INVALID ACL_ERROR_RT_INVALID_DEVICEID ACL_ERROR_RT_CONTEXT_NULL
ACL_ERROR_RT_STREAM_CONTEXT ACL_ERROR_RT_INVALID_HANDLE ACL_ERROR_RT_WAIT_TIMEOUT
ACL_ERROR_RT_FEATURE_NOT_SUPPORT ACL_ERROR_RT_MEMORY_ALLOCATION ACL_ERROR_RT_NO_DEVICE
""".split()

BUILTIN_WORDS = {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned"}
QUALIFIERS = {"const", "volatile", "struct", "enum"}


def fail(msg):
    sys.exit(f"extract_decls.py: {msg}")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def normalise_type(text):
    """`const  char*` -> `const char *`, `void**` -> `void **`."""
    tokens = re.findall(r"[A-Za-z_]\w*|\*", text)
    words = [t for t in tokens if t != "*"]
    stars = tokens.count("*")
    if tokens != words + ["*"] * stars:
        fail(f"unexpected type layout '{text.strip()}'")
    return " ".join(words) + (" " + "*" * stars if stars else "")


def split_param(text):
    """A parameter declaration without its name, normalised; '' for an empty list or (void)."""
    text = text.strip()
    if text in ("", "void"):
        return ""
    tokens = re.findall(r"[A-Za-z_]\w*|\*|\S", text)
    if any(t not in ("*",) and not re.match(r"[A-Za-z_]\w*$", t) for t in tokens):
        fail(f"unsupported parameter '{text}' (arrays, function pointers, defaults)")
    last = tokens[-1]
    type_words = [t for t in tokens[:-1] if t != "*" and t not in QUALIFIERS]
    named = last != "*" and last not in BUILTIN_WORDS and type_words
    return normalise_type(" ".join(tokens[:-1] if named else tokens))


def find_functions(sources):
    found = {}
    pattern = re.compile(r"ACL_FUNC_VISIBILITY\s+([^;{}()]*?)\b([A-Za-z_]\w*)\s*\(([^()]*)\)\s*;")
    for path, text in sources:
        for m in pattern.finditer(text):
            ret, name, params = m.groups()
            if name not in FUNCTIONS:
                continue
            ret = re.sub(r"\bACL_DEPRECATED(_MESSAGE\([^)]*\))?", " ", ret)
            decl = (normalise_type(ret), [p for p in map(split_param, params.split(",")) if p])
            if name in found and found[name][0] != decl:
                fail(f"{name} is declared twice, differently ({found[name][1]} and {path.name})")
            found[name] = (decl, path.name)
    missing = [f for f in FUNCTIONS if f not in found]
    if missing:
        fail("not declared with ACL_FUNC_VISIBILITY: " + ", ".join(missing))
    return {name: decl for name, (decl, _) in found.items()}


def find_typedefs(text):
    out = {}
    for name in TYPEDEFS:
        plain = re.findall(r"typedef\s+([^;(){}]*?)\b" + name + r"\s*;", text)
        fnptr = re.findall(
            r"typedef\s+([^;(){}]+?)\(\s*\*\s*" + name + r"\s*\)\s*\(([^()]*)\)\s*;", text)
        if len(plain) + len(fnptr) != 1:
            fail(f"typedef {name}: found {len(plain) + len(fnptr)} definitions, expected 1")
        if plain:
            out[name] = normalise_type(plain[0])
        else:
            ret, params = fnptr[0]
            ps = [p for p in map(split_param, params.split(",")) if p]
            out[name] = f"{normalise_type(ret)} (*)({', '.join(ps)})"
    for name in ENUMS:
        out[name] = "enum"
    return out


def find_enum_values(text):
    values = {}
    for m in re.finditer(r"typedef\s+enum\s*\w*\s*\{([^{}]*)\}\s*(\w+)\s*;", text):
        body, enum_name = m.groups()
        if enum_name not in ENUMS:
            continue
        nxt = 0
        for item in filter(None, (i.strip() for i in body.split(","))):
            name, _, expr = (s.strip() for s in item.partition("="))
            if expr:
                nxt = int(re.sub(r"[uUlL]+$", "", expr), 0)
            if name in values:
                fail(f"enumerator {name} defined twice")
            values[name] = (nxt, enum_name)
            nxt += 1
    seen = {enum for _, enum in values.values()}
    missing = [e for e in ENUMS if e not in seen]
    if missing:
        fail("enum not found: " + ", ".join(missing))
    return values


def find_int_constants(text):
    values = {}
    defs = re.findall(r"static\s+const\s+int\s+(\w+)\s*=\s*(-?\w+)\s*;", text)
    defs += re.findall(
        r"^\s*#\s*define\s+(\w+)\s+(-?(?:0[xX][0-9a-fA-F]+|\d+))[uUlL]*\s*$", text, re.M)
    for name, expr in defs:
        value = int(expr, 0)
        if values.get(name, value) != value:
            fail(f"constant {name} has two values")
        values[name] = value
    return {name: (v, "int") for name, v in values.items()}


def find_structs(text):
    out = {}
    for name in STRUCTS:
        bodies = re.findall(
            r"typedef\s+struct\s+" + name + r"\s*\{([^{}]*)\}\s*" + name + r"\s*;", text)
        if len(bodies) != 1:
            fail(f"struct {name}: found {len(bodies)} definitions, expected 1")
        fields = []
        for decl in filter(None, (d.strip() for d in bodies[0].split(";"))):
            m = re.fullmatch(r"(.*?)\b([A-Za-z_]\w*)", decl, re.S)
            if not m or "[" in decl:
                fail(f"struct {name}: unsupported field '{decl}'")
            fields.append(f"{normalise_type(m.group(1))} {m.group(2)}")
        out[name] = fields
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("include_dir", type=pathlib.Path)
    ap.add_argument("--source", default="CANN ACL headers", help="where the headers came from")
    ap.add_argument("-o", "--output", type=pathlib.Path,
                    default=pathlib.Path(__file__).with_name("acl_decls.txt"))
    args = ap.parse_args()

    paths = sorted(args.include_dir.glob("*.h")) + sorted(args.include_dir.glob("error_codes/*.h"))
    if not (args.include_dir / "acl_rt.h").is_file():
        fail(f"{args.include_dir}: no acl_rt.h here (expected the acl/ include folder)")
    sources = [(p, strip_comments(p.read_text(errors="replace"))) for p in paths]
    text = "\n".join(t for _, t in sources)

    functions = find_functions(sources)
    typedefs = find_typedefs(text)
    structs = find_structs(text)
    values = {**find_int_constants(text), **find_enum_values(text)}
    missing = [c for c in CONSTANTS if c not in values]
    if missing:
        fail("constant not found: " + ", ".join(missing))

    rel = lambda p: p.relative_to(args.include_dir).as_posix()  # noqa: E731
    lines = [
        "# ACL declarations bound by rust/ascend-sys (crate ascend-sys), extracted as data from",
        f"# CANN's headers: {args.source}.",
        "# Read from: " + ", ".join(rel(p) for p in paths if p.name in
                                    ("acl.h", "acl_rt.h", "acl_base_rt.h", "rt_error_codes.h")),
        "# (acl.h includes acl_rt.h, which declares every function, typedef and struct below).",
        "# Regenerate (never edit by hand):",
        "#   python3 rust/ascend-sys/extract_decls.py <dir>/torch_npu/include/acl \\",
        "#       --source \"the torch-npu <version> wheel (PyPI), torch_npu/include/acl\"",
        "# and run `cargo test -p ascend-sys`, which compares the crate's declarations with it.",
        "",
        "[typedefs]",
    ]
    lines += [f"{n} | {typedefs[n]}" for n in TYPEDEFS + ENUMS]
    lines += ["", "[structs]"]
    lines += [f"{n} | {', '.join(structs[n])}" for n in STRUCTS]
    lines += ["", "[functions]"]
    for name in FUNCTIONS:
        ret, params = functions[name]
        lines.append(f"{ret} | {name} | {', '.join(params)}".rstrip())
    lines += ["", "[constants]"]
    lines += [f"{c} | {values[c][1]} | {values[c][0]}" for c in CONSTANTS]
    args.output.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
