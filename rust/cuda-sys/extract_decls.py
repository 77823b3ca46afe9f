#!/usr/bin/env python3
"""Extracts from CUDA's cuda.h the declarations rust/cuda-sys binds, as data.

    extract_decls.py <cuda include dir> [--source TEXT] [-o cuda_decls.txt]

<cuda include dir> is the folder holding cuda.h ($CUDA_HOME/include, or the
nvidia-cuda-runtime-cu12 wheel's nvidia/cuda_runtime/include). --source says in the output's
header which package the header came from. The output (cuda_decls.txt beside this script by
default) is what the crate's test compares its declarations with:

    [typedefs]   name | C definition     (through the typedef chain: CUdevice -> CUdevice_v1 ->
                                          int reads "int"; enum types read "enum")
    [structs]    name | C type field, C type field, ...   (in declaration order; an array field
                                          is `T[N] name`; an anonymous struct inside struct S,
                                          field f, is listed before S as `S.f`)
    [functions]  return type | API name | parameter type, ... | ABI symbol
    [constants]  name | C type | value    (enumerators: their enum's typedef)

The header is read as a C compiler reads it on 64-bit Linux (__linux__, __LP64__, C11), without
CUDA_API_PER_THREAD_DEFAULT_STREAM and outside the driver's own build: #if, #ifdef, #elif and
#else are evaluated and only the lines they keep are read. The ABI symbol of a call is its API
name after cuda.h's #define lines (`#define cuMemAlloc cuMemAlloc_v2`; `__CUDA_API_PTDS(api)` and
`__CUDA_API_PTSZ(api)` are `api` here, so it is the legacy-stream symbol, never a _ptds or _ptsz
one): the name libcuda.so.1 exports that a program compiled against this header calls.

Types are normalised: parameter names dropped, single spaces, `const` kept, a pointer written
`T *` / `T **`. Each name below must be declared exactly once (or defined once); anything
missing or ambiguous stops the script with its name, so a CUDA release that changes one of them
is noticed here. Only the header's facts are written, never its text.
"""

import argparse
import pathlib
import re
import sys

# The driver calls the library makes, by API name: the same list, in the same order, as the
# crate's `cuda!` invocation.
FUNCTIONS = """
cuInit cuDriverGetVersion cuGetErrorName cuGetErrorString
cuDeviceGetCount cuDeviceGet cuDeviceGetAttribute
cuDevicePrimaryCtxRetain cuDevicePrimaryCtxRelease
cuCtxGetCurrent cuCtxSetCurrent cuCtxGetDevice cuCtxSynchronize
cuMemGetAllocationGranularity cuMemAddressReserve cuMemAddressFree cuMemCreate cuMemRelease
cuMemMap cuMemUnmap cuMemSetAccess cuMemExportToShareableHandle cuMemImportFromShareableHandle
cuMemAlloc cuMemFree
cuMemcpy cuMemcpyAsync cuMemsetD8 cuMemsetD8Async
cuStreamCreate cuStreamDestroy cuStreamSynchronize cuLaunchHostFunc
cuStreamWriteValue32 cuStreamWaitValue32 cuStreamWriteValue64 cuStreamWaitValue64
cuModuleLoadData cuModuleGetFunction cuLaunchKernel
""".split()

# Handle, scalar and callback typedefs the signatures and structs use.
TYPEDEFS = """
CUdevice CUdeviceptr CUcontext CUstream CUmemGenericAllocationHandle CUhostFn
CUmodule CUfunction cuuint32_t cuuint64_t
""".split()

# Enum types the signatures, structs and constants use (their size is the C enum's).
ENUMS = """
CUresult CUdevice_attribute CUmemAllocationHandleType CUmemAccess_flags CUmemLocationType
CUmemAllocationType CUmemAllocationGranularity_flags CUstream_flags CUstreamWaitValue_flags
CUstreamWriteValue_flags
""".split()

# Structs passed by pointer, inner ones first (an anonymous struct inside one comes with it).
STRUCTS = ["CUmemLocation", "CUmemAllocationProp", "CUmemAccessDesc"]

# Constants the library uses: enumerators and error codes.
CONSTANTS = """
CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
CU_MEM_HANDLE_TYPE_NONE CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
CU_MEM_ACCESS_FLAGS_PROT_NONE CU_MEM_ACCESS_FLAGS_PROT_READWRITE
CU_MEM_LOCATION_TYPE_DEVICE CU_MEM_ALLOCATION_TYPE_PINNED
CU_MEM_ALLOC_GRANULARITY_MINIMUM CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
CU_STREAM_DEFAULT CU_STREAM_NON_BLOCKING
CU_STREAM_WAIT_VALUE_GEQ CU_STREAM_WAIT_VALUE_EQ CU_STREAM_WAIT_VALUE_AND CU_STREAM_WAIT_VALUE_NOR
CU_STREAM_WRITE_VALUE_DEFAULT
CUDA_SUCCESS CUDA_ERROR_INVALID_VALUE CUDA_ERROR_OUT_OF_MEMORY CUDA_ERROR_NOT_INITIALIZED
CUDA_ERROR_DEINITIALIZED CUDA_ERROR_STUB_LIBRARY CUDA_ERROR_DEVICE_UNAVAILABLE
CUDA_ERROR_NO_DEVICE CUDA_ERROR_INVALID_DEVICE CUDA_ERROR_INVALID_IMAGE CUDA_ERROR_INVALID_CONTEXT
CUDA_ERROR_ALREADY_MAPPED CUDA_ERROR_NOT_MAPPED CUDA_ERROR_INVALID_PTX CUDA_ERROR_OPERATING_SYSTEM
CUDA_ERROR_INVALID_HANDLE CUDA_ERROR_ILLEGAL_STATE CUDA_ERROR_NOT_FOUND CUDA_ERROR_NOT_READY
CUDA_ERROR_ILLEGAL_ADDRESS CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES CUDA_ERROR_CONTEXT_IS_DESTROYED
CUDA_ERROR_ILLEGAL_INSTRUCTION CUDA_ERROR_LAUNCH_FAILED
CUDA_ERROR_NOT_PERMITTED CUDA_ERROR_NOT_SUPPORTED CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
CUDA_ERROR_TIMEOUT CUDA_ERROR_UNKNOWN
""".split()

# What a C11 compiler for 64-bit Linux defines before reading the header (only whether they are
# defined matters to cuda.h, and __STDC_VERSION__'s value).
PREDEFINED = {"__linux__": "1", "__GNUC__": "4", "__LP64__": "1", "__STDC_VERSION__": "201112L"}

BUILTIN_WORDS = {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned"}
QUALIFIERS = {"const", "volatile", "struct", "enum"}
# Types the header takes from the C library: where a typedef chain stops.
LIBC_TYPES = {"size_t", "uint32_t", "uint64_t", "int32_t", "int64_t"}


def fail(msg):
    sys.exit(f"extract_decls.py: {msg}")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def c_int(text):
    """An integer literal with its suffix (`0x7FFFFFFF`, `201112L`)."""
    return int(re.sub(r"[uUlL]+$", "", text), 0)


def evaluate(expr, names, what):
    """A constant C expression of integers, known names and the operators cuda.h uses."""
    def name_value(m):
        word = m.group(0)
        if word in ("and", "or", "not"):
            return word
        return str(names(word))

    py = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b", lambda m: str(int(m.group(1), 0)), expr)
    py = py.replace("&&", " and ").replace("||", " or ")
    py = re.sub(r"!(?!=)", " not ", py)
    py = re.sub(r"\b[A-Za-z_]\w*\b", name_value, py)
    if not re.fullmatch(r"[\s\d()+\-*<>=!|&~^andornt]*", py):
        fail(f"{what}: cannot evaluate '{expr.strip()}'")
    try:
        return eval(py, {"__builtins__": {}}, {})  # noqa: S307: only digits and operators left
    except (SyntaxError, TypeError, ValueError, ZeroDivisionError):
        fail(f"{what}: cannot evaluate '{expr.strip()}'")


class Macros:
    """The #define table as the preprocessor builds it, and the lines it keeps."""

    def __init__(self):
        self.objects = dict(PREDEFINED)  # name -> replacement text
        self.functions = {}  # name -> (parameters, body)

    def defined(self, name):
        return name in self.objects or name in self.functions

    def condition(self, expr):
        expr = re.sub(r"\bdefined\s*\(\s*(\w+)\s*\)|\bdefined\s+(\w+)",
                      lambda m: "1" if self.defined(m.group(1) or m.group(2)) else "0", expr)

        def value(name):
            body = self.objects.get(name, "").strip()
            return c_int(body) if re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)[uUlL]*", body) else 0

        return bool(evaluate(expr, value, "#if"))

    def define(self, rest):
        m = re.match(r"(\w+)\(([^)]*)\)\s*(.*)$", rest, re.S)
        if m:
            params = [p.strip() for p in m.group(2).split(",") if p.strip()]
            self.functions[m.group(1)] = (params, m.group(3).strip())
            self.objects.pop(m.group(1), None)
            return
        m = re.match(r"(\w+)\s*(.*)$", rest, re.S)
        if not m:
            fail(f"cannot read #define {rest}")
        self.objects[m.group(1)] = m.group(2).strip()
        self.functions.pop(m.group(1), None)

    def undef(self, name):
        self.objects.pop(name, None)
        self.functions.pop(name, None)

    def expand_name(self, name, seen=()):
        """The identifier `name` becomes after expansion: an API name's ABI symbol."""
        if name in seen or name not in self.objects:
            return name
        body = self.objects[name]
        call = re.fullmatch(r"(\w+)\s*\(\s*(\w+)\s*\)", body)
        if call and call.group(1) in self.functions:
            params, fbody = self.functions[call.group(1)]
            if len(params) != 1:
                fail(f"{name}: {call.group(1)} takes {len(params)} arguments")
            text = re.sub(r"\b" + params[0] + r"\b", call.group(2), fbody)
            text = re.sub(r"\s*##\s*", "", text)
            return self.expand_name(text.strip(), seen + (name,))
        if re.fullmatch(r"\w+", body):
            return self.expand_name(body, seen + (name,))
        fail(f"{name} is defined as '{body}', not as another name")


def preprocess(text):
    """The lines the conditionals keep (directives blanked, line numbers kept), and the macros.

    #include is not followed: cuda.h includes only the C library's headers, whose types
    (LIBC_TYPES) are where typedef chains stop."""
    text = strip_comments(text).replace("\\\n", " \n")
    macros = Macros()
    out = []
    # One entry per open #if: (the enclosing region is kept, this branch is kept, a branch of
    # this #if was already taken).
    stack = []
    active = True
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"\s*#\s*(\w+)\s*(.*)$", line)
        if not m:
            out.append(line if active else "")
            continue
        out.append("")
        directive, rest = m.group(1), m.group(2).strip()
        if directive in ("if", "ifdef", "ifndef"):
            if directive == "if":
                taken = active and macros.condition(rest)
            else:
                taken = active and (macros.defined(rest) == (directive == "ifdef"))
            stack.append((active, taken))
            active = taken
        elif directive in ("elif", "else"):
            if not stack:
                fail(f"cuda.h:{n}: #{directive} without #if")
            parent, done = stack[-1]
            if directive == "elif":
                taken = parent and not done and macros.condition(rest)
            else:
                taken = parent and not done
            stack[-1] = (parent, done or taken)
            active = taken
        elif directive == "endif":
            if not stack:
                fail(f"cuda.h:{n}: #endif without #if")
            active = stack.pop()[0]
        elif not active:
            continue
        elif directive == "define":
            macros.define(rest)
        elif directive == "undef":
            macros.undef(rest)
        elif directive == "error":
            fail(f"cuda.h:{n}: #error {rest}")
    if stack:
        fail("cuda.h: unterminated #if")
    kept = "\n".join(out)
    # Calling-convention and attribute macros that are empty here (CUDAAPI, CUDA_CB,
    # __CUDA_DEPRECATED) are dropped so that declarations read as plain C.
    empty = [name for name, body in macros.objects.items() if body == "" and name.isidentifier()]
    if empty:
        kept = re.sub(r"\b(" + "|".join(map(re.escape, empty)) + r")\b", " ", kept)
    return kept, macros


def normalise_type(text):
    """`const  char*` -> `const char *`, `void**` -> `void **`."""
    tokens = re.findall(r"[A-Za-z_]\w*|\*", text)
    words = [t for t in tokens if t != "*"]
    stars = tokens.count("*")
    if tokens != words + ["*"] * stars or not words:
        fail(f"unexpected type layout '{text.strip()}'")
    return " ".join(words) + (" " + "*" * stars if stars else "")


def split_param(text):
    """A parameter declaration without its name, normalised; '' for an empty list or (void)."""
    text = text.strip()
    if text in ("", "void"):
        return ""
    tokens = re.findall(r"[A-Za-z_]\w*|\*|\S", text)
    if any(t != "*" and not re.match(r"[A-Za-z_]\w*$", t) for t in tokens):
        fail(f"unsupported parameter '{text}' (arrays, function pointers, defaults)")
    last = tokens[-1]
    type_words = [t for t in tokens[:-1] if t != "*" and t not in QUALIFIERS]
    named = last != "*" and last not in BUILTIN_WORDS and type_words
    return normalise_type(" ".join(tokens[:-1] if named else tokens))


def find_functions(text, macros):
    found = {}
    for m in re.finditer(r"(?<=[;{}])([^;{}()#]*?)\b([A-Za-z_]\w*)\s*\(([^()]*)\)\s*;", text):
        ret, name, params = m.groups()
        if name not in FUNCTIONS:
            continue
        if "typedef" in ret.split():
            continue
        decl = (normalise_type(ret), [p for p in map(split_param, params.split(",")) if p])
        if name in found:
            fail(f"{name} is declared twice in the lines cuda.h keeps")
        found[name] = decl
    missing = [f for f in FUNCTIONS if f not in found]
    if missing:
        fail("not declared: " + ", ".join(missing))
    out = {}
    for name, (ret, params) in found.items():
        symbol = macros.expand_name(name)
        if re.search(r"_pt(ds|sz)$", symbol):
            fail(f"{name} resolves to {symbol}, a per-thread-stream symbol")
        out[name] = (ret, params, symbol)
    return out


def find_typedef(text, name):
    """What `name` is typedef'd as, through its chain, normalised."""
    plain = re.findall(r"\btypedef\s+([^;(){}]*?)\b" + name + r"\s*;", text)
    fnptr = re.findall(
        r"\btypedef\s+([^;(){}]+?)\(\s*\*\s*" + name + r"\s*\)\s*\(([^()]*)\)\s*;", text)
    if len(plain) + len(fnptr) != 1:
        fail(f"typedef {name}: found {len(plain) + len(fnptr)} definitions, expected 1")
    if fnptr:
        ret, params = fnptr[0]
        ps = [p for p in map(split_param, params.split(",")) if p]
        return f"{normalise_type(ret)} (*)({', '.join(ps)})"
    definition = normalise_type(plain[0])
    if re.fullmatch(r"\w+", definition) and definition not in LIBC_TYPES | BUILTIN_WORDS:
        return find_typedef(text, definition)
    return definition


def find_enums(text):
    """Each enum type of ENUMS -> its enumerators' (name, value), in order."""
    out = {}
    for m in re.finditer(r"\btypedef\s+enum\s*\w*\s*\{([^{}]*)\}\s*(\w+)\s*;", text):
        body, enum_name = m.groups()
        if enum_name not in ENUMS:
            continue
        if enum_name in out:
            fail(f"enum {enum_name} defined twice")
        values = {}

        def earlier(word):
            if word not in values:
                fail(f"enum {enum_name}: '{word}' is not an earlier enumerator")
            return values[word]

        nxt = 0
        for item in filter(None, (i.strip() for i in body.split(","))):
            name, _, expr = (s.strip() for s in item.partition("="))
            if expr:
                nxt = evaluate(expr, earlier, name)
            if name in values:
                fail(f"enumerator {name} defined twice")
            values[name] = nxt
            nxt += 1
        out[enum_name] = values
    missing = [e for e in ENUMS if e not in out]
    if missing:
        fail("enum not found: " + ", ".join(missing))
    return out


def matching_brace(text, start):
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i
    fail("unbalanced braces")


def struct_bodies(text):
    """typedef name -> the body of `typedef struct [tag] { body } name;`."""
    bodies = {}
    for m in re.finditer(r"\btypedef\s+struct\s*\w*\s*\{", text):
        end = matching_brace(text, m.end() - 1)
        tail = re.match(r"\s*(\w+)\s*;", text[end + 1:])
        if tail:
            bodies.setdefault(tail.group(1), []).append(text[m.end():end])
    return bodies


def split_fields(body):
    """A struct body split at its top-level semicolons."""
    fields, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == ";" and depth == 0:
            fields.append(body[start:i].strip())
            start = i + 1
    if body[start:].strip():
        fail(f"struct field without ';': {body[start:].strip()}")
    return [f for f in fields if f]


def parse_struct(name, body, macros, out):
    """Appends `name`'s fields to out, an anonymous struct inside it first as `name.field`."""
    fields = []
    for decl in split_fields(body):
        nested = re.match(r"struct\s*\{", decl)
        if nested:
            end = matching_brace(decl, nested.end() - 1)
            field = decl[end + 1:].strip()
            if not re.fullmatch(r"[A-Za-z_]\w*", field):
                fail(f"struct {name}: unsupported field '{decl}'")
            parse_struct(f"{name}.{field}", decl[nested.end():end], macros, out)
            fields.append(f"{name}.{field} {field}")
            continue
        m = re.fullmatch(r"(.*?)\b([A-Za-z_]\w*)\s*(?:\[\s*(\w+)\s*\])?", decl, re.S)
        if not m or "{" in decl:
            fail(f"struct {name}: unsupported field '{decl}'")
        ctype, field, count = m.groups()
        ctype = normalise_type(ctype)
        if count is not None:
            count = macros.objects.get(count, count)
            if not re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)[uUlL]*", count):
                fail(f"struct {name}: array size '{count}' of {field}")
            ctype += f"[{c_int(count)}]"
        fields.append(f"{ctype} {field}")
    out[name] = fields


def find_structs(text, macros):
    bodies = struct_bodies(text)
    out = {}
    for name in STRUCTS:
        target = name
        while target not in bodies:
            alias = re.findall(r"\btypedef\s+(\w+)\s+" + target + r"\s*;", text)
            if len(alias) != 1:
                fail(f"struct {name}: no single definition of {target}")
            target = alias[0]
        if len(bodies[target]) != 1:
            fail(f"struct {name}: {len(bodies[target])} definitions of {target}")
        parse_struct(name, bodies[target][0], macros, out)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("include_dir", type=pathlib.Path)
    ap.add_argument("--source", default="CUDA's cuda.h", help="where the header came from")
    ap.add_argument("-o", "--output", type=pathlib.Path,
                    default=pathlib.Path(__file__).with_name("cuda_decls.txt"))
    args = ap.parse_args()

    header = args.include_dir / "cuda.h"
    if not header.is_file():
        fail(f"{args.include_dir}: no cuda.h here (expected CUDA's include folder)")
    text, macros = preprocess(header.read_text(errors="replace"))
    text = ";" + text
    version = macros.objects.get("CUDA_VERSION", "")
    if not re.fullmatch(r"\d+", version):
        fail("cuda.h defines no CUDA_VERSION")
    version = int(version)

    functions = find_functions(text, macros)
    typedefs = {name: find_typedef(text, name) for name in TYPEDEFS}
    typedefs.update({name: "enum" for name in ENUMS})
    structs = find_structs(text, macros)
    enums = find_enums(text)
    values = {c: (v, enum) for enum, vs in enums.items() for c, v in vs.items()}
    missing = [c for c in CONSTANTS if c not in values]
    if missing:
        fail("constant not found: " + ", ".join(missing))

    lines = [
        "# CUDA driver declarations bound by rust/cuda-sys (crate cuda-sys), extracted as data",
        f"# from the cuda.h of CUDA {version // 1000}.{version % 1000 // 10} "
        f"(CUDA_VERSION {version}):",
        f"#   {args.source}.",
        "# cuda.h is read as a C11 compiler for 64-bit Linux reads it, without",
        "# CUDA_API_PER_THREAD_DEFAULT_STREAM. Regenerate (never edit by hand):",
        "#   python3 rust/cuda-sys/extract_decls.py <dir>/nvidia/cuda_runtime/include \\",
        "#       --source \"the nvidia-cuda-runtime-cu12 <version> wheel (PyPI)\"",
        "# and run `cargo test -p cuda-sys`, which compares the crate's declarations with it.",
        "#",
        "# [typedefs]   name | C definition (through typedef chains; an enum type reads `enum`)",
        "# [structs]    name | C type field, ... (declaration order; an array field is",
        "#              `T[N] name`; the anonymous struct that is field f of struct S is",
        "#              listed before S as `S.f`)",
        "# [functions]  return type | API name | parameter types, comma-separated | ABI symbol",
        "#              (the symbol of libcuda.so.1 the API name is in cuda.h, e.g.",
        "#              `#define cuMemAlloc cuMemAlloc_v2`: the legacy-stream one, never a",
        "#              _ptds/_ptsz one)",
        "# [constants]  name | C type (the enumerator's enum) | value",
        "",
        "[typedefs]",
    ]
    lines += [f"{n} | {typedefs[n]}" for n in TYPEDEFS + ENUMS]
    lines += ["", "[structs]"]
    lines += [f"{n} | {', '.join(fields)}" for n, fields in structs.items()]
    lines += ["", "[functions]"]
    for name in FUNCTIONS:
        ret, params, symbol = functions[name]
        lines.append(f"{ret} | {name} | {', '.join(params)} | {symbol}")
    lines += ["", "[constants]"]
    lines += [f"{c} | {values[c][1]} | {values[c][0]}" for c in CONSTANTS]
    args.output.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
