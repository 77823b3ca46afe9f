//! The crate's CANN type lists (`cann_types!`, which declares the typed families) against the
//! one table they come from, `device/include/shmem/cann_types.h`: its X-macro lists expanded
//! here, each C type with the Rust type it binds as, name by name in the header's order.

use shmem_sys::{CANN_P2P_TYPES, CANN_RMA_TYPES};
use std::collections::BTreeMap;

const HEADER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../device/include/shmem/cann_types.h"
);

/// The header's `#define NAME(X) body` macros, continuation lines joined: name -> body.
fn lists(text: &str) -> BTreeMap<String, String> {
    let joined = text.replace("\\\n", " ");
    joined
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#define "))
        .filter_map(|l| l.split_once("(X)"))
        .map(|(name, body)| (name.trim().to_string(), body.trim().to_string()))
        .collect()
}

/// The (NAME, TYPE) entries of list `name`, the lists it names expanded in place.
fn expand(lists: &BTreeMap<String, String>, name: &str) -> Vec<(String, String)> {
    let body = lists
        .get(name)
        .unwrap_or_else(|| panic!("{HEADER}: no list {name}"));
    let mut out = Vec::new();
    let mut rest = body.as_str();
    while let Some((head, tail)) = rest.split_once(')') {
        let (callee, args) = head
            .split_once('(')
            .unwrap_or_else(|| panic!("{HEADER}: {name}: cannot read '{head})'"));
        match callee.trim() {
            "X" => {
                let (n, t) = args
                    .split_once(',')
                    .unwrap_or_else(|| panic!("{HEADER}: {name}: X({args}) is not X(NAME, TYPE)"));
                out.push((n.trim().to_string(), t.trim().to_string()));
            }
            list if args.trim() == "X" => out.extend(expand(lists, list)),
            other => panic!("{HEADER}: {name}: unexpected {other}({args})"),
        }
        rest = tail;
    }
    assert!(
        rest.trim().is_empty(),
        "{HEADER}: {name}: trailing '{rest}'"
    );
    out
}

/// The Rust type the crate binds a C element type as.
fn rust_of(c: &str) -> &'static str {
    match c {
        "float" => "f32",
        "double" => "f64",
        "char" => "c_char",
        "int8_t" => "i8",
        "int16_t" => "i16",
        "int32_t" => "i32",
        "int64_t" => "i64",
        "uint8_t" => "u8",
        "uint16_t" => "u16",
        "uint32_t" => "u32",
        "uint64_t" => "u64",
        other => panic!("{HEADER}: a host type without a Rust type here: {other}"),
    }
}

fn assert_list(ours: &[(&str, &str)], list: &str) {
    let text = std::fs::read_to_string(HEADER).unwrap_or_else(|e| panic!("{HEADER}: {e}"));
    let theirs: Vec<(String, String)> = expand(&lists(&text), list)
        .into_iter()
        .map(|(n, c)| (n, rust_of(&c).to_string()))
        .collect();
    let ours: Vec<(String, String)> = ours
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    assert_eq!(ours, theirs, "cann_types! vs {list} of {HEADER}");
}

#[test]
fn rma_types_are_the_headers() {
    assert_list(CANN_RMA_TYPES, "ACLSHMEMI_HOST_TYPES");
}

#[test]
fn p2p_types_are_the_headers() {
    assert_list(CANN_P2P_TYPES, "ACLSHMEMI_P2P_TYPES");
}

/// The reader above, on lists written here: nested lists expand in place, in order.
#[test]
fn lists_expand_in_order() {
    let text = "#define A(X) X(a, int8_t) B(X)\n#define B(X) \\\n    X(b, char)\n";
    let got = expand(&lists(text), "A");
    assert_eq!(
        got,
        [("a".into(), "int8_t".into()), ("b".into(), "char".into())]
    );
}
