//! The macros and the checks on a binding of a few C library functions written here: the
//! tables describe what the macros defined, the loader resolves and calls them, the checks
//! pass on data that states the binding's facts, and each kind of drift between the binding
//! and the data (a type, a symbol, a field, a value, a name) fails, naming what drifted.

use std::ffi::CStr;
use std::path::PathBuf;

use sys_decl::check::{Check, Spec};
use sys_decl::{Constant, Decl, Field, Signature, StructDecl, Typedef};

/// The bindings, at a module's root as a bindings crate has them.
#[allow(non_camel_case_types)]
mod libc_decls {
    use std::ffi::{c_char, c_void};

    sys_decl::typedefs! {
        /// An opaque handle.
        handle_t: "struct handle_st *" = *mut c_void;
        /// A callback.
        callback_t: "void (*)(void *)" = unsafe extern "C" fn(*mut c_void);
        /// An enum.
        status_t: "enum" = u32;
        /// A status that is an `int`.
        err_t: "int" = i32;
        /// An integer through a typedef chain.
        count_t: "unsigned long long" = u64;
    }

    sys_decl::structs! {
        /// A struct nested by name.
        struct inner_t {
            /// A byte.
            tag: u8 => "tag",
            /// Padded to 4.
            value: i32 => "value",
        }

        /// The anonymous struct that is `outer_t`'s field `anon`.
        struct outer_anon as "outer_t.anon" {
            /// A 16-bit integer.
            half: u16 => "half",
        }

        /// A struct C pads: after `a`, after `c`, after `anon`.
        struct outer_t {
            /// A byte.
            a: u8 => "a",
            /// Aligned to 8.
            b: count_t => "b",
            /// An array.
            c: [u8; 3] => "c",
            /// A pointer.
            p: handle_t => "p",
            /// A struct.
            inner: inner_t => "inner",
            /// An anonymous struct.
            anon: outer_anon => "anon",
        }
    }

    sys_decl::functions! {
        /// A few functions of the C library.
        pub struct Libc;

        /// The length of a C string.
        fn strlen(s: *const c_char => "const char *") -> usize => "size_t";
        /// The absolute value of an `int`.
        fn abs(j: i32 => "int") -> i32 => "int";
        /// `labs`, under another API name.
        fn labs_of as labs(j: i64 => "long") -> i64 => "long";
        /// Takes nothing.
        fn getpid() -> i32 => "int";
    }

    sys_decl::constants! {
        /// Success.
        STATUS_OK: status_t = 0;
        /// A failure.
        STATUS_FAIL: status_t = 7;
        /// An error code of C type `int`.
        ERR_BIG: err_t = 100000;
        /// Another type with a value `STATUS_FAIL` has.
        SEVEN: count_t = 7;
    }
}

/// A binding of a function the C library lacks.
mod missing {
    sys_decl::functions! {
        /// A function that is nowhere.
        pub struct Missing;

        /// Not in the C library.
        fn sys_decl_no_such_function() -> i32 => "int";
    }
}

use libc_decls::*;

/// The facts of the binding above, as an extractor would write them.
const DATA: &str = "\
# A comment line.
[typedefs]
handle_t | struct handle_st *
callback_t | void (*)(void *)
status_t | enum
err_t | int
count_t | unsigned long long

[structs]
inner_t | unsigned char tag, int value
outer_t.anon | unsigned short half
outer_t | unsigned char a, count_t b, unsigned char[3] c, handle_t p, inner_t inner, outer_t.anon anon

[functions]
size_t | strlen | const char * | strlen
int | abs | int | abs
long | labs_of | long | labs
int | getpid |  | getpid

[constants]
STATUS_OK | status_t | 0
STATUS_FAIL | status_t | 7
ERR_BIG | int | 100000
SEVEN | count_t | 7
";

const SPEC: Spec = Spec {
    path: "/nonexistent/test_decls.txt",
    symbol_column: true,
    scalars: &[
        ("void", "c_void"),
        ("char", "c_char"),
        ("unsigned char", "u8"),
        ("unsigned short", "u16"),
        ("int", "i32"),
        ("long", "i64"),
        ("unsigned long long", "u64"),
        ("size_t", "usize"),
    ],
    typedefs: TYPEDEFS,
    structs: STRUCTS,
    functions: DECLS,
    constants: CONSTANTS,
};

/// The checks on `DATA` with `from` replaced by `to` (which must occur).
fn check_with(from: &str, to: &str) -> Check<'static> {
    assert!(DATA.contains(from), "the data has no '{from}'");
    Check {
        spec: &SPEC,
        data: SPEC.parse(&DATA.replace(from, to)),
    }
}

fn all_checks(check: &Check) {
    check.typedefs_match();
    check.structs_match();
    check.functions_match();
    check.constants_match();
}

#[test]
fn tables_describe_the_bindings() {
    let names: Vec<&str> = TYPEDEFS.iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        ["handle_t", "callback_t", "status_t", "err_t", "count_t"]
    );
    assert_eq!(
        (TYPEDEFS[1].c_def, TYPEDEFS[1].rust_def),
        ("void (*)(void *)", "unsafe extern \"C\" fn(*mut c_void)")
    );

    let outer = STRUCTS.iter().find(|s| s.name == "outer_t").expect("bound");
    let offsets: Vec<usize> = outer.fields.iter().map(|f| (f.offset)()).collect();
    assert_eq!((outer.size, outer.align), (48, 8));
    assert_eq!(offsets, [0, 8, 16, 24, 32, 40]);
    assert_eq!(outer.fields[2].rust_type.replace(' ', ""), "[u8;3]");
    let anon = STRUCTS[1];
    assert_eq!((anon.name, anon.c_name), ("outer_anon", "outer_t.anon"));
    assert_eq!((STRUCTS[0].name, STRUCTS[0].c_name), ("inner_t", "inner_t"));

    let labs = DECLS[2];
    assert_eq!((labs.name, labs.symbol), ("labs_of", "labs"));
    assert_eq!((labs.c_ret, labs.c_params), ("long", &["long"][..]));
    assert_eq!((labs.rust_ret, labs.rust_params), ("i64", &["i64"][..]));
    assert_eq!((DECLS[0].name, DECLS[0].symbol), ("strlen", "strlen"));
    assert_eq!(DECLS[0].rust_params[0].replace("* ", "*"), "*const c_char");
    assert!(DECLS[3].c_params.is_empty() && DECLS[3].rust_params.is_empty());

    let values: Vec<(&str, &str, i64)> = CONSTANTS
        .iter()
        .map(|c| (c.name, c.rust_type, c.value))
        .collect();
    assert_eq!(
        values,
        [
            ("STATUS_OK", "status_t", 0),
            ("STATUS_FAIL", "status_t", 7),
            ("ERR_BIG", "err_t", 100000),
            ("SEVEN", "count_t", 7),
        ]
    );
}

#[test]
fn defaults_are_zero() {
    let outer = outer_t::default();
    assert!(outer.p.is_null());
    assert_eq!(
        (outer.a, outer.b, outer.c, outer.inner, outer.anon),
        (
            0,
            0,
            [0; 3],
            inner_t { tag: 0, value: 0 },
            outer_anon { half: 0 }
        )
    );
}

#[test]
fn constant_names_are_found_by_type_and_value() {
    assert_eq!(
        Constant::name_of(CONSTANTS, "status_t", 7),
        Some("STATUS_FAIL")
    );
    assert_eq!(Constant::name_of(CONSTANTS, "count_t", 7), Some("SEVEN"));
    assert_eq!(Constant::name_of(CONSTANTS, "err_t", 7), None);
    assert_eq!(Constant::name_of(CONSTANTS, "status_t", 8), None);
}

#[test]
fn the_loader_resolves_and_calls() {
    let libc = Libc::load("libc.so.6").expect("the C library loads");
    let text = c"sys-decl";
    // SAFETY: strlen reads a NUL-terminated string, which `text` is.
    let len = unsafe { (libc.strlen)(text.as_ptr()) };
    assert_eq!(len, CStr::to_bytes(text).len());
    // SAFETY: abs and labs take any value but the minimum.
    let (abs, labs) = unsafe { ((libc.abs)(-5), (libc.labs_of)(-7_000_000_000)) };
    assert_eq!((abs, labs), (5, 7_000_000_000));
    // SAFETY: getpid takes nothing and cannot fail.
    let pid = unsafe { (libc.getpid)() };
    assert_eq!(u32::try_from(pid).ok(), Some(std::process::id()));
    assert_eq!(format!("{libc:?}"), "Libc { .. }");
}

#[test]
fn the_loader_fails_naming_what_is_missing() {
    let name = "libsys-decl-not-installed-here.so";
    let err = Libc::load(name).expect_err("no such library");
    assert!(err.to_string().contains(name), "{err}");
    let err = missing::Missing::load("libc.so.6").expect_err("no such symbol");
    assert!(
        err.to_string().contains("sys_decl_no_such_function"),
        "{err}"
    );
}

#[test]
fn the_checks_pass_on_the_bindings_facts() {
    assert_eq!(SPEC.file(), "test_decls.txt");
    let check = check_of(SPEC);
    all_checks(&check);
    SPEC.assert_unique_names();
    assert_eq!(
        check.c_layout("outer_t"),
        (48, 8, vec![0, 8, 16, 24, 32, 40])
    );
    assert_eq!(check.c_size_align("unsigned char[3]"), (3, 1));
    let pointer = (std::mem::size_of::<usize>(), std::mem::align_of::<usize>());
    assert_eq!(check.c_size_align("callback_t"), pointer);
    assert_eq!(check.c_to_rust("struct handle_st **"), "*mut *mut c_void");
    assert_eq!(check.c_to_rust("const handle_t *"), "*const *mut c_void");
    assert_eq!(check.c_to_rust("outer_t.anon"), "outer_anon");
    assert_eq!(check.c_to_rust("count_t"), "u64");
    assert_eq!(check.rust_canon("* mut handle_t"), "*mut *mut c_void");
    assert_eq!(check.rust_canon("[count_t ; 2]"), "[u64; 2]");
}

#[test]
fn a_data_file_without_symbols_resolves_by_name() {
    let spec = Spec {
        symbol_column: false,
        ..SPEC
    };
    let data = spec.parse("[functions]\nint | abs | int\nint | getpid |\n");
    assert_eq!(data.functions["abs"].symbol, "abs");
    assert!(data.functions["getpid"].params.is_empty());
}

#[test]
#[should_panic(
    expected = "test_decls.txt:2: unexpected line in [functions]: int | abs | int | abs"
)]
fn a_symbol_column_where_there_is_none_is_an_error() {
    let spec = Spec {
        symbol_column: false,
        ..SPEC
    };
    spec.parse("[functions]\nint | abs | int | abs\n");
}

#[test]
#[should_panic(expected = "unexpected line in [functions]: int | abs | int |")]
fn an_empty_symbol_is_an_error() {
    SPEC.parse("[functions]\nint | abs | int |\n");
}

#[test]
#[should_panic(expected = "test_decls.txt:3: listed twice: int | abs | int | abs")]
fn a_name_listed_twice_is_an_error() {
    SPEC.parse("[functions]\nint | abs | int | abs\nint | abs | int | abs\n");
}

#[test]
#[should_panic(expected = "unexpected line in [constants]: X | int | seven")]
fn a_value_that_is_no_number_is_an_error() {
    SPEC.parse("[constants]\nX | int | seven\n");
}

#[test]
#[should_panic(expected = "unexpected line in [enums]: X | int")]
fn an_unknown_section_is_an_error() {
    SPEC.parse("[enums]\nX | int\n");
}

#[test]
#[should_panic(expected = "test_decls.txt: no constants")]
fn a_data_file_must_list_every_kind() {
    let data = &DATA[..DATA.find("[constants]").expect("in the data")];
    let (spec, dir) = spec_in_scratch("no_constants", data);
    let _cleanup = Cleanup(dir);
    spec.load();
}

/// The checks of `DATA` against the bindings with `spec`'s tables.
fn check_of(spec: Spec) -> Check<'static> {
    Check {
        spec: Box::leak(Box::new(spec)),
        data: SPEC.parse(DATA),
    }
}

/// `table` with its item `index` replaced by `with`: a binding drifted from what it states.
fn replaced<T: Copy>(table: &[T], index: usize, with: T) -> &'static [T] {
    let mut table = table.to_vec();
    table[index] = with;
    Box::leak(table.into_boxed_slice())
}

#[test]
#[should_panic(expected = "typedef err_t: Rust type")]
fn a_typedef_bound_as_another_type_fails() {
    let err_t = Typedef {
        rust_def: "u32",
        ..TYPEDEFS[3]
    };
    check_of(Spec {
        typedefs: replaced(TYPEDEFS, 3, err_t),
        ..SPEC
    })
    .typedefs_match();
}

#[test]
#[should_panic(expected = "struct inner_t: field value's type")]
fn a_field_bound_as_another_type_fails() {
    let value = Field {
        rust_type: "u32",
        ..STRUCTS[0].fields[1]
    };
    let inner = StructDecl {
        fields: replaced(STRUCTS[0].fields, 1, value),
        ..STRUCTS[0]
    };
    check_of(Spec {
        structs: replaced(STRUCTS, 0, inner),
        ..SPEC
    })
    .structs_match();
}

#[test]
#[should_panic(expected = "strlen: parameter 0")]
fn a_parameter_bound_as_another_type_fails() {
    let strlen = Decl {
        rust_params: &["*mut c_char"],
        ..DECLS[0]
    };
    check_of(Spec {
        functions: replaced(DECLS, 0, strlen),
        ..SPEC
    })
    .functions_match();
}

#[test]
#[should_panic(expected = "STATUS_OK: bound with its typedef")]
fn an_enumerator_bound_without_its_typedef_fails() {
    let ok = Constant {
        rust_type: "u32",
        ..CONSTANTS[0]
    };
    check_of(Spec {
        constants: replaced(CONSTANTS, 0, ok),
        ..SPEC
    })
    .constants_match();
}

#[test]
#[should_panic(expected = "ERR_BIG: type")]
fn a_constant_bound_as_another_type_fails() {
    let big = Constant {
        rust_type: "u32",
        ..CONSTANTS[2]
    };
    check_of(Spec {
        constants: replaced(CONSTANTS, 2, big),
        ..SPEC
    })
    .constants_match();
}

#[test]
#[should_panic(expected = "labs_of: ABI symbol")]
fn another_symbol_fails() {
    check_with("| long | labs", "| long | labs_v2").functions_match();
}

#[test]
#[should_panic(expected = "strlen: C parameter types")]
fn another_c_spelling_fails() {
    check_with("| strlen | const char *", "| strlen | char const *").functions_match();
}

#[test]
#[should_panic(expected = "getpid: C parameter types")]
fn a_parameter_added_fails() {
    check_with("int | getpid |  |", "int | getpid | int |").functions_match();
}

#[test]
#[should_panic(expected = "functions bound vs functions in test_decls.txt")]
fn a_function_missing_from_the_data_fails() {
    check_with("int | abs | int | abs\n", "").functions_match();
}

#[test]
#[should_panic(expected = "struct outer_t: fields")]
fn fields_in_another_order_fail() {
    check_with("unsigned char a, count_t b", "count_t b, unsigned char a").structs_match();
}

#[test]
#[should_panic(expected = "struct inner_t: size and alignment")]
fn a_field_of_another_size_fails() {
    check_with(
        "unsigned char tag, int value",
        "unsigned char tag, long value",
    )
    .structs_match();
}

#[test]
#[should_panic(expected = "struct outer_t: field c's type")]
fn an_array_of_another_length_fails() {
    check_with("unsigned char[3] c", "unsigned char[2] c").structs_match();
}

#[test]
#[should_panic(expected = "typedef err_t: C definition")]
fn a_typedef_of_another_type_fails() {
    check_with("err_t | int", "err_t | unsigned int").typedefs_match();
}

#[test]
#[should_panic(expected = "typedefs bound vs typedefs in test_decls.txt")]
fn a_typedef_missing_from_the_binding_fails() {
    check_with(
        "count_t | unsigned long long",
        "count_t | unsigned long long\nextra_t | int",
    )
    .typedefs_match();
}

#[test]
#[should_panic(expected = "STATUS_FAIL: value")]
fn another_value_fails() {
    check_with("STATUS_FAIL | status_t | 7", "STATUS_FAIL | status_t | 8").constants_match();
}

#[test]
#[should_panic(expected = "ERR_BIG: bound with its typedef")]
fn an_enumerator_bound_with_another_typedef_fails() {
    check_with("ERR_BIG | int | 100000", "ERR_BIG | status_t | 100000").constants_match();
}

#[test]
#[should_panic(expected = "STATUS_FAIL: an enum past int")]
fn an_enum_past_int_fails() {
    let past_int = Constant {
        value: 1 << 31,
        ..CONSTANTS[1]
    };
    let check = Check {
        data: SPEC.parse(&DATA.replace("| status_t | 7", "| status_t | 2147483648")),
        ..check_of(Spec {
            constants: replaced(CONSTANTS, 1, past_int),
            ..SPEC
        })
    };
    check.constants_match();
}

#[test]
#[should_panic(expected = "names bound twice: [\"abs\"]")]
fn a_name_bound_twice_fails() {
    let abs = Constant {
        name: "abs",
        ..CONSTANTS[0]
    };
    Spec {
        constants: replaced(CONSTANTS, 0, abs),
        ..SPEC
    }
    .assert_unique_names();
}

#[test]
#[should_panic(
    expected = "C type 'const float *': 'float' is neither a known scalar nor in test_decls.txt"
)]
fn an_unknown_c_type_fails() {
    check_of(SPEC).c_to_rust("const float *");
}

/// A scratch folder removed when dropped.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A spec whose data file, `test_decls.txt` holding `text`, lies in a scratch folder of its
/// own beside an `extract_decls.py` that copies the `test_decls.txt` of the folder it is given
/// (exit status 2 where there is none).
fn spec_in_scratch(name: &str, text: &str) -> (Spec, PathBuf) {
    let dir = std::env::temp_dir().join(format!("sys-decl-{name}.{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let path = dir.join("test_decls.txt");
    std::fs::write(&path, text).expect("data written");
    std::fs::write(
        dir.join("extract_decls.py"),
        "import os, shutil, sys\n\
         source = os.path.join(sys.argv[1], 'test_decls.txt')\n\
         if not os.path.isfile(source):\n    sys.exit(2)\n\
         shutil.copy(source, sys.argv[3])\n",
    )
    .expect("extractor written");
    let path: &'static str = Box::leak(path.to_string_lossy().into_owned().into_boxed_str());
    (Spec { path, ..SPEC }, dir)
}

#[test]
fn a_fresh_extraction_states_the_same_facts() {
    let (spec, dir) = spec_in_scratch("extract", DATA);
    let _cleanup = Cleanup(dir.clone());
    let headers = dir.join("headers");
    std::fs::create_dir_all(&headers).expect("a headers folder");
    let check = spec.load();
    all_checks(&check);

    // Comment lines aside, the same facts.
    std::fs::write(
        headers.join("test_decls.txt"),
        DATA.replace("# A comment line.", "# Another comment."),
    )
    .expect("fresh data written");
    let Some(fresh) = spec.extract(&headers) else {
        return;
    };
    let fresh = fresh.unwrap_or_else(|e| panic!("{e}"));
    spec.assert_same_facts(&fresh, "the headers");

    // A changed fact is named.
    std::fs::write(
        headers.join("test_decls.txt"),
        DATA.replace("| 7\n", "| 8\n"),
    )
    .expect("fresh data written");
    let fresh = spec
        .extract(&headers)
        .expect("python3 ran a moment ago")
        .unwrap_or_else(|e| panic!("{e}"));
    let differs = std::panic::catch_unwind(|| spec.assert_same_facts(&fresh, "the headers"))
        .expect_err("a changed value is a difference");
    let message = differs
        .downcast_ref::<String>()
        .expect("a formatted message");
    assert!(
        message.contains("test_decls.txt differs from the headers")
            && message.contains("STATUS_FAIL | status_t | 7")
            && message.contains("STATUS_FAIL | status_t | 8"),
        "{message}"
    );

    // An extractor that fails is an error, not a skip.
    let failed = spec
        .extract(&dir.join("no-headers-here"))
        .expect("python3 ran a moment ago");
    assert!(failed.is_err_and(|e| e.contains("extract_decls.py")));
}

/// Functions a crate links (declared in an `extern "C"` block) rather than loads, by their Rust
/// types: `labs` under its symbol, `getpid` with no parameters, `qsort`'s comparator as a
/// nullable function pointer with parameter names.
const LINKED: &[Signature] = &[
    Signature {
        symbol: "strlen",
        rust_ret: "usize",
        rust_params: &["*const c_char"],
    },
    Signature {
        symbol: "labs",
        rust_ret: "i64",
        rust_params: &["i64"],
    },
    Signature {
        symbol: "getpid",
        rust_ret: "i32",
        rust_params: &[],
    },
    Signature {
        symbol: "qsort",
        rust_ret: "()",
        rust_params: &[
            "*mut c_void",
            "usize",
            "usize",
            "Option < unsafe extern \"C\" fn(a : * const c_void, b : * const c_void) -> i32 >",
        ],
    },
];

/// `DATA`'s functions with `qsort` (a function pointer parameter, a `void` return) added, its
/// API names the symbols, as a linked crate's data file has them.
fn linked_check() -> Check<'static> {
    let spec: &'static Spec = Box::leak(Box::new(Spec {
        symbol_column: false,
        ..SPEC
    }));
    let functions = "[functions]\n\
                     size_t | strlen | const char *\n\
                     long | labs | long\n\
                     int | getpid | \n\
                     void | qsort | void *, size_t, size_t, int (*)(const void *, const void *)\n";
    Check {
        spec,
        data: spec.parse(functions),
    }
}

#[test]
fn linked_signatures_match_the_data() {
    linked_check().signatures_match(LINKED);
}

#[test]
#[should_panic(expected = "qsort: parameter 3")]
fn a_callback_bound_with_another_parameter_fails() {
    let qsort = Signature {
        rust_params: &[
            "*mut c_void",
            "usize",
            "usize",
            "Option<unsafe extern \"C\" fn(a: *mut c_void, b: *const c_void) -> i32>",
        ],
        ..LINKED[3]
    };
    linked_check().signatures_match(&[qsort]);
}

#[test]
#[should_panic(expected = "getpid: Rust return type")]
fn a_linked_return_bound_as_another_type_fails() {
    let getpid = Signature {
        rust_ret: "()",
        ..LINKED[2]
    };
    linked_check().signatures_match(&[getpid]);
}

#[test]
#[should_panic(expected = "abs_of: not a function of test_decls.txt")]
fn a_linked_function_the_data_lacks_fails() {
    let abs = Signature {
        symbol: "abs_of",
        ..LINKED[1]
    };
    linked_check().signatures_match(&[abs]);
}
