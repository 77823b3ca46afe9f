//! The crate's declarations against `cuda_decls.txt`, the facts `extract_decls.py` took from
//! CUDA's cuda.h: the same functions with the same C types and the same ABI symbols, Rust types
//! that are those C types, structs laid out as C lays out the header's, and the same constant
//! values. A binding that drifts from the header (a parameter added, a `size_t` bound as `u32`,
//! a field moved, `cuMemAlloc` resolved without its `_v2`) fails here rather than on a GPU.
//! The extractor itself is checked too: on a cuda.h written from the data it gives the data
//! back, and where a CUDA toolkit is installed it finds the same facts in its cuda.h.

use std::collections::{BTreeMap, BTreeSet};

use cuda_sys::{CONSTANTS, DECLS, STRUCTS, TYPEDEFS};

/// One function of the data.
struct Function {
    ret: String,
    params: Vec<String>,
    symbol: String,
}

/// `cuda_decls.txt`, parsed.
struct Data {
    typedefs: BTreeMap<String, String>,
    /// Struct name -> (C type, field name), in declaration order.
    structs: BTreeMap<String, Vec<(String, String)>>,
    /// API name -> its prototype and ABI symbol.
    functions: BTreeMap<String, Function>,
    /// Constant name -> (C type, value).
    constants: BTreeMap<String, (String, i64)>,
}

fn parse_text(text: &str) -> Data {
    let mut data = Data {
        typedefs: BTreeMap::new(),
        structs: BTreeMap::new(),
        functions: BTreeMap::new(),
        constants: BTreeMap::new(),
    };
    let mut section = String::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        let parts: Vec<&str> = line.split('|').map(str::trim).collect();
        let bad = || {
            format!(
                "cuda_decls.txt:{}: unexpected line in {section}: {line}",
                n + 1
            )
        };
        let fresh = match (section.as_str(), parts.as_slice()) {
            ("[typedefs]", [name, def]) => data
                .typedefs
                .insert(name.to_string(), def.to_string())
                .is_none(),
            ("[structs]", [name, fields]) => {
                let fields = fields
                    .split(',')
                    .map(|f| {
                        let (ty, name) = f
                            .trim()
                            .rsplit_once(' ')
                            .unwrap_or_else(|| panic!("{}", bad()));
                        (ty.to_string(), name.to_string())
                    })
                    .collect();
                data.structs.insert(name.to_string(), fields).is_none()
            }
            ("[functions]", [ret, name, params, symbol]) if !symbol.is_empty() => {
                let params = params
                    .split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(String::from)
                    .collect();
                let function = Function {
                    ret: ret.to_string(),
                    params,
                    symbol: symbol.to_string(),
                };
                data.functions.insert(name.to_string(), function).is_none()
            }
            ("[constants]", [name, ty, value]) => {
                let value = value.parse().unwrap_or_else(|_| panic!("{}", bad()));
                data.constants
                    .insert(name.to_string(), (ty.to_string(), value))
                    .is_none()
            }
            _ => panic!("{}", bad()),
        };
        assert!(fresh, "cuda_decls.txt:{}: listed twice: {line}", n + 1);
    }
    data
}

fn parse() -> Data {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/cuda_decls.txt");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let data = parse_text(&text);
    for (what, len) in [
        ("typedefs", data.typedefs.len()),
        ("structs", data.structs.len()),
        ("functions", data.functions.len()),
        ("constants", data.constants.len()),
    ] {
        assert!(len > 0, "cuda_decls.txt: no {what}");
    }
    data
}

/// The Rust name of a struct of the data (`CUmemAllocationProp.allocFlags` is
/// `CUmemAllocationProp_flags`).
fn rust_struct_name(c_name: &str) -> &'static str {
    STRUCTS
        .iter()
        .find(|s| s.c_name == c_name)
        .unwrap_or_else(|| panic!("struct {c_name} of the data is not bound"))
        .name
}

/// The Rust type a C type of the data binds as, spelled like `stringify!` spells a type, with
/// aliases resolved the way [`rust_canon`] resolves them: handles and integers to what they
/// alias, enums to `u32`, opaque structs behind pointers to `c_void`, structs and callback
/// typedefs by name.
fn c_to_rust(data: &Data, c: &str) -> String {
    if c == "enum" {
        return "u32".into();
    }
    if let Some((ret, params)) = c.split_once(" (*)(") {
        let params = params
            .strip_suffix(')')
            .expect("a function pointer's parameters");
        let params: Vec<String> = params
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| c_to_rust(data, p))
            .collect();
        let ret = match ret {
            "void" => String::new(),
            r => format!(" -> {}", c_to_rust(data, r)),
        };
        return format!("unsafe extern \"C\" fn({}){ret}", params.join(", "));
    }
    if let Some((element, count)) = c.strip_suffix(']').and_then(|c| c.split_once('[')) {
        return format!("[{}; {count}]", c_to_rust(data, element));
    }
    let words: Vec<&str> = c.split_whitespace().collect();
    let stars: usize = words
        .iter()
        .filter(|w| w.chars().all(|ch| ch == '*'))
        .map(|w| w.len())
        .sum();
    let is_const = words.contains(&"const");
    let base: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| *w != "const" && !w.starts_with('*'))
        .collect();
    let mut rust = match base.join(" ").as_str() {
        "void" => "c_void".to_string(),
        "char" => "c_char".into(),
        "unsigned char" => "u8".into(),
        "unsigned short" => "u16".into(),
        "int" | "int32_t" => "i32".into(),
        "unsigned int" | "uint32_t" => "u32".into(),
        "unsigned long long" | "uint64_t" => "u64".into(),
        "size_t" => "usize".into(),
        // A struct cuda.h never defines, known only through pointers (CUctx_st).
        opaque if opaque.starts_with("struct ") && stars > 0 => "c_void".into(),
        name => match data.typedefs.get(name) {
            Some(def) if def.contains("(*)") => name.to_string(),
            Some(def) => c_to_rust(data, def),
            None if data.structs.contains_key(name) => rust_struct_name(name).to_string(),
            None => panic!("C type '{c}': '{name}' is neither a known scalar nor in the data"),
        },
    };
    for level in 0..stars {
        let pointer = if level == 0 && is_const {
            "*const"
        } else {
            "*mut"
        };
        rust = format!("{pointer} {rust}");
    }
    rust
}

/// A Rust type as `stringify!` gave it, with the crate's aliases of handles, integers and
/// enums resolved (callback aliases are kept: their definitions are checked on their own).
fn rust_canon(rust: &str) -> String {
    let rust = rust.replace("* mut", "*mut").replace("* const", "*const");
    if rust.starts_with("unsafe") {
        return rust.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    if let Some((element, count)) = rust
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .and_then(|r| r.rsplit_once(';'))
    {
        return format!("[{}; {}]", rust_canon(element.trim()), count.trim());
    }
    let mut tokens: Vec<&str> = rust.split_whitespace().collect();
    let base = tokens.pop().expect("a type");
    let resolved = match TYPEDEFS.iter().find(|t| t.name == base) {
        Some(t) if !t.rust_def.starts_with("unsafe") => rust_canon(t.rust_def),
        _ => base.to_string(),
    };
    tokens
        .iter()
        .rev()
        .fold(resolved, |inner, p| format!("{p} {inner}"))
}

#[test]
fn typedefs_match_the_header() {
    let data = parse();
    let ours: BTreeSet<&str> = TYPEDEFS.iter().map(|t| t.name).collect();
    let theirs: BTreeSet<&str> = data.typedefs.keys().map(String::as_str).collect();
    assert_eq!(ours, theirs, "typedefs bound vs typedefs in cuda_decls.txt");
    for t in TYPEDEFS {
        let c = &data.typedefs[t.name];
        assert_eq!(t.c_def, c, "typedef {}: C definition", t.name);
        assert_eq!(
            rust_canon(t.rust_def),
            c_to_rust(&data, c),
            "typedef {}: Rust type",
            t.name
        );
    }
}

/// Size and alignment of a C type of the data on this target (an enum whose values fit an
/// `int` is an `int`; the constants test checks they do).
fn c_size_align(data: &Data, c: &str) -> (usize, usize) {
    let ptr = (std::mem::size_of::<usize>(), std::mem::align_of::<usize>());
    if c.ends_with('*') {
        return ptr;
    }
    if let Some((element, count)) = c.strip_suffix(']').and_then(|c| c.split_once('[')) {
        let (size, align) = c_size_align(data, element);
        return (
            size * count.parse::<usize>().expect("an array length"),
            align,
        );
    }
    match c {
        "char" | "unsigned char" => (1, 1),
        "unsigned short" => (2, 2),
        "int" | "int32_t" | "unsigned int" | "uint32_t" => (4, 4),
        "unsigned long long" | "uint64_t" => (8, std::mem::align_of::<u64>()),
        "size_t" => ptr,
        name => match data.typedefs.get(name).map(String::as_str) {
            Some("enum") => (4, 4),
            Some(def) => c_size_align(data, def),
            None => {
                let layout = c_layout(data, name);
                (layout.0, layout.1)
            }
        },
    }
}

/// The C layout of a struct of the data: size, alignment, field offsets.
fn c_layout(data: &Data, name: &str) -> (usize, usize, Vec<usize>) {
    let fields = data
        .structs
        .get(name)
        .unwrap_or_else(|| panic!("struct {name} not in the data"));
    let (mut offset, mut align, mut offsets) = (0usize, 1usize, Vec::new());
    for (ty, _) in fields {
        let (size, a) = c_size_align(data, ty);
        offset = offset.next_multiple_of(a);
        offsets.push(offset);
        offset += size;
        align = align.max(a);
    }
    (offset.next_multiple_of(align), align, offsets)
}

#[test]
fn structs_are_laid_out_as_the_header() {
    let data = parse();
    let ours: BTreeSet<&str> = STRUCTS.iter().map(|s| s.c_name).collect();
    let theirs: BTreeSet<&str> = data.structs.keys().map(String::as_str).collect();
    assert_eq!(ours, theirs, "structs bound vs structs in cuda_decls.txt");
    for s in STRUCTS {
        let fields = &data.structs[s.c_name];
        let names: Vec<&str> = s.fields.iter().map(|f| f.c_name).collect();
        let c_names: Vec<&str> = fields.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(names, c_names, "struct {}: fields", s.c_name);
        let (size, align, offsets) = c_layout(&data, s.c_name);
        assert_eq!(
            (s.size, s.align),
            (size, align),
            "struct {}: size and alignment",
            s.c_name
        );
        for ((f, (c_type, _)), c_offset) in s.fields.iter().zip(fields).zip(offsets) {
            assert_eq!(
                rust_canon(f.rust_type),
                c_to_rust(&data, c_type),
                "struct {}: field {}'s type",
                s.c_name,
                f.c_name
            );
            assert_eq!(
                (f.offset)(),
                c_offset,
                "struct {}: field {}'s offset",
                s.c_name,
                f.c_name
            );
        }
    }
    // The layouts gcc gives cuda.h's structs on x86-64 and aarch64 Linux.
    let layout = |c_name: &str| {
        let s = STRUCTS.iter().find(|s| s.c_name == c_name).expect("bound");
        let offsets: Vec<usize> = s.fields.iter().map(|f| (f.offset)()).collect();
        (s.size, offsets)
    };
    assert_eq!(layout("CUmemLocation"), (8, vec![0, 4]));
    assert_eq!(
        layout("CUmemAllocationProp.allocFlags"),
        (8, vec![0, 1, 2, 4])
    );
    assert_eq!(layout("CUmemAllocationProp"), (32, vec![0, 4, 8, 16, 24]));
    assert_eq!(layout("CUmemAccessDesc"), (12, vec![0, 8]));
}

#[test]
fn functions_match_the_header() {
    let data = parse();
    let mut ours: Vec<&str> = DECLS.iter().map(|d| d.name).collect();
    ours.sort_unstable();
    let theirs: Vec<&str> = data.functions.keys().map(String::as_str).collect();
    assert_eq!(
        ours, theirs,
        "functions bound vs functions in cuda_decls.txt"
    );
    for d in DECLS {
        let f = &data.functions[d.name];
        assert_eq!(d.symbol, f.symbol, "{}: ABI symbol", d.name);
        assert_eq!(d.c_ret, f.ret, "{}: C return type", d.name);
        assert_eq!(
            d.c_params,
            f.params.as_slice(),
            "{}: C parameter types",
            d.name
        );
        assert_eq!(
            rust_canon(d.rust_ret),
            c_to_rust(&data, &f.ret),
            "{}: Rust return type",
            d.name
        );
        assert_eq!(
            d.rust_params.len(),
            f.params.len(),
            "{}: parameter count",
            d.name
        );
        for (i, (rust, c)) in d.rust_params.iter().zip(&f.params).enumerate() {
            assert_eq!(
                rust_canon(rust),
                c_to_rust(&data, c),
                "{}: parameter {i}",
                d.name
            );
        }
    }
}

#[test]
fn constants_match_the_header() {
    let data = parse();
    let mut ours: Vec<&str> = CONSTANTS.iter().map(|c| c.name).collect();
    ours.sort_unstable();
    let theirs: Vec<&str> = data.constants.keys().map(String::as_str).collect();
    assert_eq!(
        ours, theirs,
        "constants bound vs constants in cuda_decls.txt"
    );
    for c in CONSTANTS {
        let (c_type, value) = &data.constants[c.name];
        assert_eq!(c.value, *value, "{}: value", c.name);
        assert_eq!(
            c.rust_type, c_type,
            "{}: bound with its enum's typedef",
            c.name
        );
        assert_eq!(
            rust_canon(c.rust_type),
            c_to_rust(&data, c_type),
            "{}: type",
            c.name
        );
        if data.typedefs.get(c_type).map(String::as_str) == Some("enum") {
            assert!(
                (0..=i64::from(i32::MAX)).contains(value),
                "{}: an enum past int",
                c.name
            );
        }
    }
}

/// The data's own parser and type mapping, on a few lines written here.
#[test]
fn type_mapping() {
    let data = parse();
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
        assert_eq!(c_to_rust(&data, c), rust, "{c}");
    }
    assert_eq!(rust_canon("*mut CUcontext"), "*mut *mut c_void");
    assert_eq!(rust_canon("[u8; 4]"), "[u8; 4]");
    assert_eq!(rust_canon("CUhostFn"), "CUhostFn");

    let lines = "[functions]\nCUresult | cuMemFree | CUdeviceptr | cuMemFree_v2\n";
    let f = &parse_text(lines).functions["cuMemFree"];
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
    parse_text("[functions]\nCUresult | cuMemFree | CUdeviceptr\n");
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

/// The data lines of a `cuda_decls.txt` (comments dropped).
fn facts(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(String::from)
        .collect()
}

/// Runs `extract_decls.py` on the cuda.h in `include` and returns what it wrote, or why it
/// failed; `None` (after saying so) where there is no `python3` to run it.
fn extract(include: &std::path::Path) -> Option<Result<String, String>> {
    let manifest = env!("CARGO_MANIFEST_DIR");
    let out = std::env::temp_dir().join(format!("cuda-sys-decls.{}.txt", std::process::id()));
    let status = match std::process::Command::new("python3")
        .arg(format!("{manifest}/extract_decls.py"))
        .arg(include)
        .arg("-o")
        .arg(&out)
        .status()
    {
        Ok(status) => status,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("skipped: no python3 to run extract_decls.py");
            return None;
        }
        Err(e) => return Some(Err(format!("python3 extract_decls.py: {e}"))),
    };
    let fresh = std::fs::read_to_string(&out);
    let _ = std::fs::remove_file(&out);
    if !status.success() {
        return Some(Err(format!(
            "extract_decls.py {}: {status}",
            include.display()
        )));
    }
    Some(fresh.map_err(|e| format!("extract_decls.py wrote no output: {e}")))
}

/// Asserts that two data files state the same facts, naming the lines that differ.
fn assert_same_facts(committed: &str, fresh: &str, header: &str) {
    let (committed, fresh) = (facts(committed), facts(fresh));
    let only_in = |a: &[String], b: &[String]| -> Vec<String> {
        a.iter().filter(|l| !b.contains(l)).cloned().collect()
    };
    assert!(
        committed == fresh,
        "cuda_decls.txt differs from {header}: regenerate it (see its header) and rebind.\n\
         only in cuda_decls.txt: {:#?}\nonly in the header: {:#?}",
        only_in(&committed, &fresh),
        only_in(&fresh, &committed)
    );
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
    let data = parse();
    let dir = std::env::temp_dir().join(format!("cuda-sys-header.{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    std::fs::write(dir.join("cuda.h"), header_from(&data)).expect("cuda.h written");
    let fresh = extract(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let Some(fresh) = fresh else {
        return;
    };
    let fresh = fresh.unwrap_or_else(|e| panic!("{e}"));
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/cuda_decls.txt"))
        .expect("data");
    assert_same_facts(&committed, &fresh, "a cuda.h written from it");
}

/// On a machine with a CUDA toolkit (`CUDA_HOME` or `CUDA_PATH`), the data extracted again
/// from its cuda.h equals `cuda_decls.txt` but for the comment lines: the bindings are current
/// for that CUDA release. Without one there is no header to compare with.
#[test]
fn data_is_current_for_installed_cuda() {
    let Some(include) = installed_cuda_include() else {
        return;
    };
    let Some(fresh) = extract(&include) else {
        return;
    };
    let fresh = fresh.unwrap_or_else(|e| panic!("{e}"));
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/cuda_decls.txt"))
        .expect("data");
    assert_same_facts(
        &committed,
        &fresh,
        &format!("{}'s cuda.h", include.display()),
    );
}
