//! The crate's declarations against `acl_decls.txt`, the facts `extract_decls.py` took from
//! CANN's headers: the same functions with the same C types, Rust types that are those C types,
//! structs laid out as C lays out the header's, and the same constant values. A binding that
//! drifts from the header (a parameter added, a `size_t` bound as `u32`, a field moved) fails
//! here rather than on an NPU. The comparisons are `sys_decl::check`'s; this file gives the
//! scalar types of CANN's headers, the layout CANN documents, and the check of the data against
//! an installed CANN.

use ascend_sys::{CONSTANTS, DECLS, STRUCTS, TYPEDEFS};
use sys_decl::check::Spec;

/// `acl_decls.txt`, whose functions are resolved by their names (no symbol column), the C
/// scalar types CANN's declarations use with the Rust types they bind as, and the crate's
/// tables.
const SPEC: Spec = Spec {
    path: concat!(env!("CARGO_MANIFEST_DIR"), "/acl_decls.txt"),
    symbol_column: false,
    scalars: &[
        ("void", "c_void"),
        ("char", "c_char"),
        ("int", "i32"),
        ("int32_t", "i32"),
        ("uint32_t", "u32"),
        ("uint64_t", "u64"),
        ("size_t", "usize"),
    ],
    typedefs: TYPEDEFS,
    structs: STRUCTS,
    functions: DECLS,
    constants: CONSTANTS,
};

sys_decl::decls_tests!(SPEC);

/// The layout CANN documents for the call that allocates the heap: u32, u32, u32, {u32, u32},
/// u64.
#[test]
fn structs_are_laid_out_as_cann_documents() {
    assert_eq!(
        SPEC.rust_layout("aclrtPhysicalMemProp"),
        (32, vec![0, 4, 8, 12, 24])
    );
    assert_eq!(SPEC.rust_layout("aclrtMemLocation"), (8, vec![0, 4]));
}

/// The data's parser and type mapping, on CANN's types and a line written here.
#[test]
fn type_mapping() {
    let check = SPEC.load();
    let cases = [
        ("const char *", "*const c_char"),
        ("void **", "*mut *mut c_void"),
        ("aclrtStream *", "*mut *mut c_void"),
        (
            "const aclrtPhysicalMemProp *",
            "*const aclrtPhysicalMemProp",
        ),
        ("aclrtMemcpyKind", "u32"),
        ("aclError", "i32"),
        ("aclrtHostFunc", "aclrtHostFunc"),
        ("void (*)(void *)", "unsafe extern \"C\" fn(*mut c_void)"),
    ];
    for (c, rust) in cases {
        assert_eq!(check.c_to_rust(c), rust, "{c}");
    }
    assert_eq!(check.rust_canon("*mut aclrtContext"), "*mut *mut c_void");
    assert_eq!(check.rust_canon("aclrtHostFunc"), "aclrtHostFunc");

    // ACL renames nothing: a function is resolved by its name.
    let f = &SPEC
        .parse("[functions]\naclError | aclrtFree | void *\n")
        .functions["aclrtFree"];
    assert_eq!(
        (f.ret.as_str(), f.symbol.as_str()),
        ("aclError", "aclrtFree")
    );
    assert_eq!(f.params, ["void *"]);
    assert!(DECLS.iter().all(|d| d.symbol == d.name));
}

/// A function line with a symbol column is not acl_decls.txt's format.
#[test]
#[should_panic(expected = "unexpected line in [functions]")]
fn a_function_line_has_no_symbol() {
    SPEC.parse("[functions]\naclError | aclrtFree | void * | aclrtFree_v2\n");
}

/// On a machine with CANN (`ASCEND_HOME_PATH`, set by CANN's `set_env.sh`), the data extracted
/// again from its headers equals `acl_decls.txt` but for the comment lines: the bindings are
/// current for that CANN release. Without CANN there are no headers to compare with.
#[test]
fn data_is_current_for_installed_cann() {
    let Some(home) = std::env::var_os("ASCEND_HOME_PATH") else {
        eprintln!("skipped: ASCEND_HOME_PATH is not set (no CANN here)");
        return;
    };
    let include = std::path::Path::new(&home).join("include/acl");
    assert!(
        include.join("acl_rt.h").is_file(),
        "{}: no acl_rt.h",
        include.display()
    );
    let fresh = SPEC
        .extract(&include)
        .expect("python3 runs extract_decls.py")
        .unwrap_or_else(|e| panic!("{e}"));
    SPEC.assert_same_facts(&fresh, &format!("{}'s headers", include.display()));
}
