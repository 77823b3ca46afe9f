#!/usr/bin/env python3
"""gen_api_list.py [--check FILE]: the list of every routine name of the OpenSHMEM 1.5 C API.

Written from the specification (OpenSHMEM 1.5, June 2020): its type tables and the synopses
of each section are the data below, and every name is generated from them, typed, sized, ctx,
team and deprecated forms included. Type-generic names (C11 _Generic, shmem_put(...)) are
macros, not symbols, and are not listed. Each listed name X also has the profiling twin
p + X (pshmem_X for shmem_X, pstart_pes for start_pes): the list does not repeat them.

Without arguments, prints the list (tests/abi/openshmem-1.5-api.txt is its committed output).
With --check FILE, exits 1 unless FILE is exactly that output.
"""
import sys

# ---- Type tables: (TYPE, TYPENAME) ----------------------------------------------------------

# Standard RMA types (RMA, put-with-signal, alltoall(s), broadcast, collect, fcollect).
STD_RMA = [
    ("float", "float"), ("double", "double"), ("long double", "longdouble"),
    ("char", "char"), ("signed char", "schar"), ("short", "short"), ("int", "int"),
    ("long", "long"), ("long long", "longlong"), ("unsigned char", "uchar"),
    ("unsigned short", "ushort"), ("unsigned int", "uint"), ("unsigned long", "ulong"),
    ("unsigned long long", "ulonglong"), ("int8_t", "int8"), ("int16_t", "int16"),
    ("int32_t", "int32"), ("int64_t", "int64"), ("uint8_t", "uint8"), ("uint16_t", "uint16"),
    ("uint32_t", "uint32"), ("uint64_t", "uint64"), ("size_t", "size"),
    ("ptrdiff_t", "ptrdiff"),
]

# Standard AMO types (compare_swap, fetch_inc, inc, fetch_add, add).
STD_AMO = [
    ("int", "int"), ("long", "long"), ("long long", "longlong"), ("unsigned int", "uint"),
    ("unsigned long", "ulong"), ("unsigned long long", "ulonglong"), ("int32_t", "int32"),
    ("int64_t", "int64"), ("uint32_t", "uint32"), ("uint64_t", "uint64"), ("size_t", "size"),
    ("ptrdiff_t", "ptrdiff"),
]

# Extended AMO types (fetch, set, swap): the standard ones plus float and double.
EXT_AMO = STD_AMO + [("float", "float"), ("double", "double")]

# Bitwise AMO types (fetch_and/or/xor, and/or/xor).
BITWISE_AMO = [
    ("unsigned int", "uint"), ("unsigned long", "ulong"), ("unsigned long long", "ulonglong"),
    ("int32_t", "int32"), ("int64_t", "int64"), ("uint32_t", "uint32"), ("uint64_t", "uint64"),
]

# Point-to-point synchronization types (wait_until, test, and their _all/_any/_some[_vector]).
P2P_SYNC = [
    ("short", "short"), ("int", "int"), ("long", "long"), ("long long", "longlong"),
    ("unsigned short", "ushort"), ("unsigned int", "uint"), ("unsigned long", "ulong"),
    ("unsigned long long", "ulonglong"), ("int32_t", "int32"), ("int64_t", "int64"),
    ("uint32_t", "uint32"), ("uint64_t", "uint64"), ("size_t", "size"),
    ("ptrdiff_t", "ptrdiff"),
]

# Reduction types and operations (team-based shmem_TYPENAME_OP_reduce).
REDUCE_BITWISE = [
    ("unsigned char", "uchar"), ("unsigned short", "ushort"), ("unsigned int", "uint"),
    ("unsigned long", "ulong"), ("unsigned long long", "ulonglong"), ("int8_t", "int8"),
    ("int16_t", "int16"), ("int32_t", "int32"), ("int64_t", "int64"), ("uint8_t", "uint8"),
    ("uint16_t", "uint16"), ("uint32_t", "uint32"), ("uint64_t", "uint64"), ("size_t", "size"),
]
REDUCE_COMPARE = [
    ("char", "char"), ("signed char", "schar"), ("short", "short"), ("int", "int"),
    ("long", "long"), ("long long", "longlong"), ("ptrdiff_t", "ptrdiff"),
    ("unsigned char", "uchar"), ("unsigned short", "ushort"), ("unsigned int", "uint"),
    ("unsigned long", "ulong"), ("unsigned long long", "ulonglong"), ("int8_t", "int8"),
    ("int16_t", "int16"), ("int32_t", "int32"), ("int64_t", "int64"), ("uint8_t", "uint8"),
    ("uint16_t", "uint16"), ("uint32_t", "uint32"), ("uint64_t", "uint64"), ("size_t", "size"),
    ("float", "float"), ("double", "double"), ("long double", "longdouble"),
]
REDUCE_ARITH = REDUCE_COMPARE + [("double _Complex", "complexd"), ("float _Complex", "complexf")]
REDUCTIONS = [
    ("and", REDUCE_BITWISE), ("or", REDUCE_BITWISE), ("xor", REDUCE_BITWISE),
    ("max", REDUCE_COMPARE), ("min", REDUCE_COMPARE),
    ("sum", REDUCE_ARITH), ("prod", REDUCE_ARITH),
]

# Deprecated active-set reductions shmem_TYPENAME_OP_to_all keep their pre-1.5 type sets.
TO_ALL_BITWISE = [("short", "short"), ("int", "int"), ("long", "long"),
                  ("long long", "longlong")]
TO_ALL_COMPARE = TO_ALL_BITWISE + [("float", "float"), ("double", "double"),
                                   ("long double", "longdouble")]
TO_ALL_ARITH = TO_ALL_COMPARE + [("double _Complex", "complexd"),
                                 ("float _Complex", "complexf")]
TO_ALL = [
    ("and", TO_ALL_BITWISE), ("or", TO_ALL_BITWISE), ("xor", TO_ALL_BITWISE),
    ("max", TO_ALL_COMPARE), ("min", TO_ALL_COMPARE),
    ("sum", TO_ALL_ARITH), ("prod", TO_ALL_ARITH),
]

# Deprecated AMO names (before 1.4's shmem_TYPENAME_atomic_*) keep their old type sets.
DEPRECATED_AMO_STD = [("int", "int"), ("long", "long"), ("long long", "longlong")]
DEPRECATED_AMO_EXT = DEPRECATED_AMO_STD + [("float", "float"), ("double", "double")]
# Deprecated shmem_TYPENAME_wait.
DEPRECATED_WAIT = [("short", "short"), ("int", "int"), ("long", "long"),
                   ("long long", "longlong")]

# Element sizes in bits of the sized RMA and put-with-signal routines.
SIZES = [8, 16, 32, 64, 128]

# ---- Routine families -----------------------------------------------------------------------

SETUP = ["init", "init_thread", "query_thread", "finalize", "global_exit", "my_pe", "n_pes",
         "pe_accessible", "addr_accessible", "ptr", "info_get_version", "info_get_name",
         "pcontrol"]
MEMORY = ["malloc", "free", "realloc", "align", "malloc_with_hints", "calloc"]
TEAMS = ["team_my_pe", "team_n_pes", "team_get_config", "team_translate_pe",
         "team_split_strided", "team_split_2d", "team_destroy", "team_ptr", "team_sync"]
CONTEXTS = ["ctx_create", "team_create_ctx", "ctx_destroy", "ctx_get_team"]
ORDERING = ["fence", "quiet"]  # each with a ctx form
BARRIERS = ["barrier_all", "sync_all"]
LOCKS = ["set_lock", "clear_lock", "test_lock"]
SIGNAL = ["signal_fetch", "signal_wait_until"]

TYPED_RMA = ["put", "get", "p", "g", "iput", "iget", "put_nbi", "get_nbi",
             "put_signal", "put_signal_nbi"]
SIZED_RMA = ["put{}", "get{}", "iput{}", "iget{}", "put{}_nbi", "get{}_nbi",
             "put{}_signal", "put{}_signal_nbi"]
MEM_RMA = ["putmem", "getmem", "putmem_nbi", "getmem_nbi", "putmem_signal",
           "putmem_signal_nbi"]

AMO_EXT = ["atomic_fetch", "atomic_set", "atomic_swap", "atomic_fetch_nbi", "atomic_swap_nbi"]
AMO_STD = ["atomic_compare_swap", "atomic_fetch_inc", "atomic_inc", "atomic_fetch_add",
           "atomic_add", "atomic_compare_swap_nbi", "atomic_fetch_inc_nbi",
           "atomic_fetch_add_nbi"]
AMO_BITWISE = ["atomic_fetch_and", "atomic_fetch_or", "atomic_fetch_xor", "atomic_and",
               "atomic_or", "atomic_xor", "atomic_fetch_and_nbi", "atomic_fetch_or_nbi",
               "atomic_fetch_xor_nbi"]

P2P = ["wait_until", "wait_until_all", "wait_until_any", "wait_until_some",
       "wait_until_all_vector", "wait_until_any_vector", "wait_until_some_vector",
       "test", "test_all", "test_any", "test_some", "test_all_vector", "test_any_vector",
       "test_some_vector"]

TEAM_COLLECTIVES = ["alltoall", "alltoalls", "broadcast", "collect", "fcollect"]

DEPRECATED_UNPREFIXED = ["start_pes", "_my_pe", "_num_pes", "shmalloc", "shfree", "shrealloc",
                         "shmemalign"]
DEPRECATED_CACHE = ["clear_cache_inv", "set_cache_inv", "clear_cache_line_inv",
                    "set_cache_line_inv", "udcflush", "udcflush_line"]
DEPRECATED_ACTIVE_SET = ["barrier", "sync"] + [
    f"{op}{bits}" for op in ["broadcast", "collect", "fcollect", "alltoall", "alltoalls"]
    for bits in (32, 64)]


def names():
    out = set()

    def add(name, ctx=False):
        out.add("shmem_" + name)
        if ctx:
            out.add("shmem_ctx_" + name)

    for n in SETUP + MEMORY + TEAMS + CONTEXTS + BARRIERS + LOCKS + SIGNAL:
        add(n)
    for n in ORDERING:
        add(n, ctx=True)

    # RMA and put-with-signal: typed, sized, bytes; every one with its ctx form.
    for _, t in STD_RMA:
        for op in TYPED_RMA:
            add(f"{t}_{op}", ctx=True)
    for bits in SIZES:
        for op in SIZED_RMA:
            add(op.format(bits), ctx=True)
    for n in MEM_RMA:
        add(n, ctx=True)

    # AMOs, blocking and non-blocking, with ctx forms.
    for table, ops in ((EXT_AMO, AMO_EXT), (STD_AMO, AMO_STD), (BITWISE_AMO, AMO_BITWISE)):
        for _, t in table:
            for op in ops:
                add(f"{t}_{op}", ctx=True)

    # Point-to-point synchronization (no ctx forms).
    for _, t in P2P_SYNC:
        for op in P2P:
            add(f"{t}_{op}")

    # Team-based collectives.
    for _, t in STD_RMA:
        for op in TEAM_COLLECTIVES:
            add(f"{t}_{op}")
    for op in TEAM_COLLECTIVES:
        add(f"{op}mem")
    for op, table in REDUCTIONS:
        for _, t in table:
            add(f"{t}_{op}_reduce")

    # Deprecated, still supported in 1.5.
    out.update(DEPRECATED_UNPREFIXED)
    for n in DEPRECATED_CACHE + DEPRECATED_ACTIVE_SET:
        add(n)
    for op, table in TO_ALL:
        for _, t in table:
            add(f"{t}_{op}_to_all")
    for _, t in DEPRECATED_AMO_EXT:
        for op in ("fetch", "set", "swap"):
            add(f"{t}_{op}")
    for _, t in DEPRECATED_AMO_STD:
        for op in ("cswap", "finc", "inc", "fadd", "add"):
            add(f"{t}_{op}")
    for _, t in DEPRECATED_WAIT:
        add(f"{t}_wait")
    add("wait")
    add("wait_until")  # the long form; also the C11 generic name
    return sorted(out)


HEADER = """\
# Every routine name of the OpenSHMEM 1.5 C API, one per line, generated from the
# specification's tables by tests/abi/gen_api_list.py (do not edit: regenerate). Each name X
# also has its profiling twin p + X (pshmem_X, pstart_pes), not repeated here.
"""


def render():
    return HEADER + "".join(n + "\n" for n in names())


def main(argv):
    if len(argv) == 3 and argv[1] == "--check":
        with open(argv[2], encoding="utf-8") as f:
            if f.read() != render():
                print(f"FAIL: {argv[2]} differs from the output of {argv[0]}; regenerate it")
                return 1
        print(f"OK: {argv[2]} is the generator's output ({len(names())} names)")
        return 0
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
