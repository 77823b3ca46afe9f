//! The crate's declarations against `shmem_decls.txt`, the prototypes `extract_decls.py` took
//! from the library's headers (`<shmem.h>`, `<shmemx.h>`, `<aclshmem.h>`): every function
//! declared here is one the headers declare, with Rust types that are its C return and
//! parameter types. A declaration that drifts from the header (a parameter added, an `int`
//! bound as `i64`, a `const` pointee bound `*mut`) fails here, naming it. The comparisons are
//! `sys_decl::check`'s; this file gives the C types the headers use with the Rust types they
//! bind as, and checks that the data is current for the headers of this tree.

use shmem_sys::declared_signatures;
use sys_decl::check::Spec;

/// `shmem_decls.txt` (functions only, resolved by their names) and the C types of the
/// headers' prototypes: C's scalars as `core::ffi` names them, the fixed-width ones as Rust's,
/// and the library's own typedefs and structs by their names, which the crate gives the
/// Rust items that bind them.
const SPEC: Spec = Spec {
    path: concat!(env!("CARGO_MANIFEST_DIR"), "/shmem_decls.txt"),
    symbol_column: false,
    scalars: &[
        ("void", "c_void"),
        ("bool", "bool"),
        ("char", "c_char"),
        ("signed char", "c_schar"),
        ("unsigned char", "c_uchar"),
        ("short", "c_short"),
        ("unsigned short", "c_ushort"),
        ("int", "c_int"),
        ("unsigned int", "c_uint"),
        ("long", "c_long"),
        ("unsigned long", "c_ulong"),
        ("long long", "c_longlong"),
        ("unsigned long long", "c_ulonglong"),
        ("float", "f32"),
        ("double", "f64"),
        ("int8_t", "i8"),
        ("int16_t", "i16"),
        ("int32_t", "i32"),
        ("int64_t", "i64"),
        ("uint8_t", "u8"),
        ("uint16_t", "u16"),
        ("uint32_t", "u32"),
        ("uint64_t", "u64"),
        ("size_t", "usize"),
        ("ptrdiff_t", "isize"),
        ("shmem_team_t", "shmem_team_t"),
        ("shmem_ctx_t", "shmem_ctx_t"),
        ("shmem_team_config_t", "shmem_team_config_t"),
        ("aclshmem_team_t", "aclshmem_team_t"),
        ("aclshmem_team_config_t", "aclshmem_team_config_t"),
        ("aclshmemx_bootstrap_t", "aclshmemx_bootstrap_t"),
        ("aclshmemx_init_attr_t", "aclshmemx_init_attr_t"),
        ("aclshmemx_uniqueid_t", "aclshmemx_uniqueid_t"),
        ("shmemx_uniqueid_t", "shmemx_uniqueid_t"),
        ("data_op_engine_type_t", "data_op_engine_type_t"),
        ("aclshmem_decrypt_handler", "aclshmem_decrypt_handler"),
    ],
    typedefs: &[],
    structs: &[],
    functions: &[],
    constants: &[],
};

/// Every declared function is the headers', with their C types.
#[test]
fn functions_match_the_headers() {
    let check = SPEC.load();
    assert!(
        check.data.functions.len() > 1000,
        "{}: only {} functions",
        SPEC.file(),
        check.data.functions.len()
    );
    check.signatures_match(&declared_signatures());
}

/// The data extracted again from this tree's headers (cpp/include, what is installed) equals
/// `shmem_decls.txt` but for its comment lines: the data the check reads is the headers'.
#[test]
fn data_is_current_for_the_headers() {
    let include = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../cpp/include");
    let Some(fresh) = SPEC.extract(&include) else {
        return; // no python3: said so
    };
    let fresh = fresh.unwrap_or_else(|e| panic!("{e}"));
    SPEC.assert_same_facts(&fresh, &format!("{}'s headers", include.display()));
}

/// The type mapping on the shapes the headers use, and a drift: a parameter bound with
/// another width fails, naming the function and the parameter.
#[test]
fn type_mapping() {
    let check = SPEC.load();
    let cases = [
        ("const void *", "*const c_void"),
        ("shmem_team_t *", "*mut shmem_team_t"),
        (
            "aclshmemx_init_attr_t **",
            "*mut *mut aclshmemx_init_attr_t",
        ),
        (
            "void (*)(int, const char *)",
            "unsafe extern \"C\" fn(c_int, *const c_char)",
        ),
    ];
    for (c, rust) in cases {
        assert_eq!(check.c_to_rust(c), rust, "{c}");
    }
    assert_eq!(
        check.rust_canon("Option<unsafe extern \"C\" fn(level: c_int, msg: *const c_char)>"),
        "unsafe extern \"C\" fn(c_int, *const c_char)"
    );
    let drifted = sys_decl::Signature {
        symbol: "shmem_putmem",
        rust_ret: "()",
        rust_params: &["*mut c_void", "*const c_void", "u32", "c_int"],
    };
    let err = std::panic::catch_unwind(|| check.signatures_match(&[drifted]))
        .expect_err("a size_t bound as u32 fails");
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("shmem_putmem: parameter 2"), "{msg}");
}
