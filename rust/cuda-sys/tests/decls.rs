//! The crate's declarations against `cuda_decls.txt`, the facts `extract_decls.py` took from
//! CUDA's cuda.h: the same functions with the same C types and the same ABI symbols, Rust types
//! that are those C types, structs laid out as C lays out the header's, and the same constant
//! values. A binding that drifts from the header (a parameter added, a `size_t` bound as `u32`,
//! a field moved, `cuMemAlloc` resolved without its `_v2`) fails here rather than on a GPU.
//! The comparisons are `sys_decl::check`'s; this file gives cuda.h's scalar types and the
//! layouts gcc gives its structs. The extractor itself is checked too: on a cuda.h written from
//! the data it gives the data back, and where a CUDA toolkit is installed it finds the same
//! facts in its cuda.h.

use cuda_sys::{CONSTANTS, DECLS, STRUCTS, TYPEDEFS};
use sys_decl::check::{Data, Spec};

/// `cuda_decls.txt`, whose function lines end with the ABI symbol, the C scalar types cuda.h's
/// declarations use with the Rust types they bind as, and the crate's tables.
const SPEC: Spec = Spec {
    path: concat!(env!("CARGO_MANIFEST_DIR"), "/cuda_decls.txt"),
    symbol_column: true,
    scalars: &[
        ("void", "c_void"),
        ("char", "c_char"),
        ("unsigned char", "u8"),
        ("unsigned short", "u16"),
        ("int", "i32"),
        ("int32_t", "i32"),
        ("unsigned int", "u32"),
        ("uint32_t", "u32"),
        ("unsigned long long", "u64"),
        ("uint64_t", "u64"),
        ("size_t", "usize"),
    ],
    typedefs: TYPEDEFS,
    structs: STRUCTS,
    functions: DECLS,
    constants: CONSTANTS,
};

sys_decl::decls_tests!(SPEC);

/// The layouts gcc gives cuda.h's structs on x86-64 and aarch64 Linux.
#[test]
fn structs_are_laid_out_as_gcc_lays_out_cuda_h() {
    assert_eq!(SPEC.rust_layout("CUmemLocation"), (8, vec![0, 4]));
    assert_eq!(
        SPEC.rust_layout("CUmemAllocationProp.allocFlags"),
        (8, vec![0, 1, 2, 4])
    );
    assert_eq!(
        SPEC.rust_layout("CUmemAllocationProp"),
        (32, vec![0, 4, 8, 16, 24])
    );
    assert_eq!(SPEC.rust_layout("CUmemAccessDesc"), (12, vec![0, 8]));
}

/// The data's parser and type mapping, on cuda.h's types and a line written here.
#[test]
fn type_mapping() {
    let check = SPEC.load();
    let cases = [
        ("const char **", "*mut *const c_char"),
        ("void *", "*mut c_void"),
        ("CUstream *", "*mut *mut c_void"),
        ("struct CUctx_st *", "*mut c_void"),
        ("const CUmemAllocationProp *", "*const CUmemAllocationProp"),
        (
            "CUmemAllocationProp.allocFlags",
            "CUmemAllocationProp_flags",
        ),
        ("unsigned char[4]", "[u8; 4]"),
        ("CUdeviceptr", "u64"),
        ("CUmemAllocationHandleType", "u32"),
        ("CUresult", "u32"),
        ("CUdevice", "i32"),
        ("cuuint64_t", "u64"),
        ("CUhostFn", "CUhostFn"),
        ("void (*)(void *)", "unsafe extern \"C\" fn(*mut c_void)"),
    ];
    for (c, rust) in cases {
        assert_eq!(check.c_to_rust(c), rust, "{c}");
    }
    assert_eq!(check.rust_canon("*mut CUcontext"), "*mut *mut c_void");
    assert_eq!(check.rust_canon("[u8; 4]"), "[u8; 4]");
    assert_eq!(check.rust_canon("CUhostFn"), "CUhostFn");

    let lines = "[functions]\nCUresult | cuMemFree | CUdeviceptr | cuMemFree_v2\n";
    let f = &SPEC.parse(lines).functions["cuMemFree"];
    assert_eq!(
        (f.ret.as_str(), f.symbol.as_str()),
        ("CUresult", "cuMemFree_v2")
    );
    assert_eq!(f.params, ["CUdeviceptr"]);
}

/// A function line without its symbol is an error, not a function resolved by its API name.
#[test]
#[should_panic(expected = "unexpected line in [functions]")]
fn a_function_line_needs_its_symbol() {
    SPEC.parse("[functions]\nCUresult | cuMemFree | CUdeviceptr\n");
}

/// The folder of cuda.h of the CUDA toolkit that `CUDA_HOME` (else `CUDA_PATH`) names, if one
/// is named and has it.
fn installed_cuda_include() -> Option<std::path::PathBuf> {
    let Some((var, home)) = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .find_map(|v| std::env::var_os(v).map(|h| (*v, h)))
    else {
        eprintln!("skipped: neither CUDA_HOME nor CUDA_PATH is set (no CUDA toolkit here)");
        return None;
    };
    let include = std::path::Path::new(&home).join("include");
    if !include.join("cuda.h").is_file() {
        eprintln!(
            "skipped: {var}={} has no include/cuda.h",
            std::path::Path::new(&home).display()
        );
        return None;
    }
    Some(include)
}

/// A cuda.h written from the data, shaped as CUDA's: typedef chains, `typedef enum`s, structs
/// behind `_v1` typedefs with an anonymous struct inside, `CUDAAPI`, calls renamed by
/// `#define` through a per-thread-stream macro, and decoys the conditionals must drop.
fn header_from(data: &Data) -> String {
    let mut h = String::from(
        "#ifndef __cuda_cuda_h__\n#define __cuda_cuda_h__\n#include <stdint.h>\n\
         #define CUDA_VERSION 12090\n\
         #ifdef _WIN32\n#define CUDAAPI __stdcall\n#else\n#define CUDAAPI\n#endif\n\
         #if defined(__CUDA_API_VERSION_INTERNAL) || defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)\n\
         #define __CUDA_API_PTSZ(api) api ## _ptsz\n#else\n#define __CUDA_API_PTSZ(api) api\n\
         #endif\n",
    );
    for (name, def) in &data.typedefs {
        if def == "enum" {
            h += &format!("typedef enum {name}_enum {{\n");
            for (c, (ty, value)) in &data.constants {
                if ty == name {
                    h += &format!("    {c} = {value:#x},\n");
                }
            }
            h += &format!("    {name}_MAX = 0x7FFFFFFF\n}} {name};\n");
        } else if let Some((ret, params)) = def.split_once(" (*)(") {
            h += &format!(
                "typedef {ret} (CUDAAPI *{name})({}arg);\n",
                &params[..params.len() - 1]
            );
        } else {
            h += &format!("typedef {def} {name}_v1;\ntypedef {name}_v1 {name};\n");
        }
    }
    let field = |(ty, name): &(String, String)| match ty.split_once('[') {
        Some((element, count)) => format!("    {element} {name}[{count};\n"),
        None => format!("    {ty} {name};\n"),
    };
    for (name, fields) in data.structs.iter().filter(|(n, _)| !n.contains('.')) {
        h += &format!("typedef struct {name}_st {{\n");
        for f in fields {
            match data.structs.get(&f.0).filter(|_| f.0.contains('.')) {
                Some(inner) => {
                    h += "    struct {\n";
                    h.extend(inner.iter().map(field));
                    h += &format!("    }} {};\n", f.1);
                }
                None => h += &field(f),
            }
        }
        h += &format!("}} {name}_v1;\ntypedef {name}_v1 {name};\n");
    }
    for (name, f) in &data.functions {
        if f.symbol != *name {
            h += &format!("#define {name} __CUDA_API_PTSZ({})\n", f.symbol);
        }
        let params: Vec<String> = f
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{p} p{i}"))
            .collect();
        h += &format!("{} CUDAAPI {name}({});\n", f.ret, params.join(", "));
    }
    // The driver's own build sees older prototypes; a compiler of programs never does.
    h += "#if defined(__CUDA_API_VERSION_INTERNAL)\n#undef cuMemAlloc\n\
          CUresult CUDAAPI cuMemAlloc(unsigned int *dptr, unsigned int bytesize);\n#endif\n#endif\n";
    h
}

/// extract_decls.py, on a cuda.h written from `cuda_decls.txt`, gives back `cuda_decls.txt`'s
/// facts: the extractor reads typedef chains, enums, nested structs, arrays, conditionals and
/// renaming `#define`s as the data says, on every machine, CUDA or not.
#[test]
fn extraction_round_trips() {
    let data = SPEC.load().data;
    let dir = std::env::temp_dir().join(format!("cuda-sys-header.{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    std::fs::write(dir.join("cuda.h"), header_from(&data)).expect("cuda.h written");
    let fresh = SPEC.extract(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let Some(fresh) = fresh else {
        return;
    };
    let fresh = fresh.unwrap_or_else(|e| panic!("{e}"));
    SPEC.assert_same_facts(&fresh, "a cuda.h written from it");
}

/// On a machine with a CUDA toolkit (`CUDA_HOME` or `CUDA_PATH`), the data extracted again
/// from its cuda.h equals `cuda_decls.txt` but for the comment lines: the bindings are current
/// for that CUDA release. Without one there is no header to compare with.
#[test]
fn data_is_current_for_installed_cuda() {
    let Some(include) = installed_cuda_include() else {
        return;
    };
    let Some(fresh) = SPEC.extract(&include) else {
        return;
    };
    let fresh = fresh.unwrap_or_else(|e| panic!("{e}"));
    SPEC.assert_same_facts(&fresh, &format!("{}'s cuda.h", include.display()));
}
