//! The checks of a bindings crate's tables against its data file (`*_decls.txt`, the facts an
//! `extract_decls.py` took from the library's headers), for that crate's tests: the same names
//! both ways, the same C types, Rust types that are those C types, structs laid out as C lays
//! out the header's, the same ABI symbols and constant values. A binding that drifts from the
//! header (a parameter added, a `size_t` bound as `u32`, a field moved, a call resolved without
//! its `_v2`) fails here, naming it, rather than on the hardware.
//!
//! Everything here panics on a difference or a malformed data file: it runs inside `#[test]`s.
//! The data file's format, shared by the extractors:
//!
//! ```text
//! [typedefs]   name | C definition (through typedef chains; an enum type reads `enum`)
//! [structs]    name | C type field, ... (declaration order; an array is `T[N] name`)
//! [functions]  return type | API name | parameter types, comma-separated [| ABI symbol]
//! [constants]  name | C type | value
//! ```
//!
//! The C types of the data map to Rust ones by the crate's scalar table ([`Spec::scalars`]),
//! the data's typedefs and structs, and these rules: a pointer is `*mut`, `*const` for a
//! `const` pointee; an enum is `u32` (its values must lie in `0..=INT_MAX`, which the constants
//! check asserts); a struct the header never defines (`struct CUctx_st *`) is `c_void` behind
//! its pointers; `T[N]` is `[T; N]`; a function pointer typedef is bound by name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::{Constant, Decl, Signature, StructDecl, Typedef};

/// The `#[test]`s every bindings crate runs against its data file, given its [`Spec`] (a
/// `const` or `static` path): `typedefs_match_the_data`, `structs_match_the_data`,
/// `functions_match_the_data`, `constants_match_the_data` ([`Check`]'s comparisons) and
/// `names_are_unique` ([`Spec::assert_unique_names`]). Written once in the crate's
/// `tests/decls.rs`, beside its own checks.
#[macro_export]
macro_rules! decls_tests {
    ($spec:path) => {
        #[test]
        fn typedefs_match_the_data() {
            $spec.load().typedefs_match();
        }

        #[test]
        fn structs_match_the_data() {
            $spec.load().structs_match();
        }

        #[test]
        fn functions_match_the_data() {
            $spec.load().functions_match();
        }

        #[test]
        fn constants_match_the_data() {
            $spec.load().constants_match();
        }

        #[test]
        fn names_are_unique() {
            $spec.assert_unique_names();
        }
    };
}

/// What a bindings crate checks: its data file, how to read it and map its C types, and its
/// tables (the `TYPEDEFS`, `STRUCTS`, `DECLS` and `CONSTANTS` its macros defined).
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// The data file's path (`concat!(env!("CARGO_MANIFEST_DIR"), "/cuda_decls.txt")`);
    /// `extract_decls.py` lies beside it.
    pub path: &'static str,
    /// Whether a function line ends with the ABI symbol column; without it the symbol is the
    /// API name, and a line with a fourth column is an error.
    pub symbol_column: bool,
    /// The C scalar types the data may use, each with the Rust type it binds as, spelled as
    /// `stringify!` spells it (`("size_t", "usize")`, `("void", "c_void")`); any other C type
    /// must be a typedef or a struct of the data.
    pub scalars: &'static [(&'static str, &'static str)],
    /// The crate's typedefs.
    pub typedefs: &'static [Typedef],
    /// The crate's structs.
    pub structs: &'static [StructDecl],
    /// The crate's functions.
    pub functions: &'static [Decl],
    /// The crate's constants.
    pub constants: &'static [Constant],
}

/// One function of the data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    /// Its C return type.
    pub ret: String,
    /// Its C parameter types, in order; empty for `()`.
    pub params: Vec<String>,
    /// The symbol of the library it resolves: the data's symbol column, else the API name.
    pub symbol: String,
}

/// A data file, parsed.
#[derive(Clone, Debug, Default)]
pub struct Data {
    /// Typedef name -> C definition.
    pub typedefs: BTreeMap<String, String>,
    /// Struct name -> (C type, field name), in declaration order.
    pub structs: BTreeMap<String, Vec<(String, String)>>,
    /// API name -> its prototype and symbol.
    pub functions: BTreeMap<String, Function>,
    /// Constant name -> (C type, value).
    pub constants: BTreeMap<String, (String, i64)>,
}

/// A crate's tables with its data file loaded: what the comparisons run on.
#[derive(Debug)]
pub struct Check<'a> {
    /// The crate's spec.
    pub spec: &'a Spec,
    /// Its data file, parsed.
    pub data: Data,
}

impl Spec {
    /// The data file's name, for messages (`cuda_decls.txt`).
    pub fn file(&self) -> &'static str {
        self.path.rsplit('/').next().unwrap_or(self.path)
    }

    /// Parses the text of a data file; panics on a line it cannot read or a name listed twice,
    /// naming the line.
    pub fn parse(&self, text: &str) -> Data {
        let file = self.file();
        let mut data = Data::default();
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
            let bad = || format!("{file}:{}: unexpected line in {section}: {line}", n + 1);
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
                ("[functions]", [ret, name, params, rest @ ..]) => {
                    let symbol = match (self.symbol_column, rest) {
                        (true, [symbol]) if !symbol.is_empty() => symbol,
                        (false, []) => name,
                        _ => panic!("{}", bad()),
                    };
                    let function = Function {
                        ret: ret.to_string(),
                        params: split_params(params),
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
            assert!(fresh, "{file}:{}: listed twice: {line}", n + 1);
        }
        data
    }

    /// Reads and parses the data file, which must list some of each kind the crate binds.
    pub fn load(&self) -> Check<'_> {
        let text =
            std::fs::read_to_string(self.path).unwrap_or_else(|e| panic!("{}: {e}", self.path));
        let data = self.parse(&text);
        for (what, len, bound) in [
            ("typedefs", data.typedefs.len(), self.typedefs.len()),
            ("structs", data.structs.len(), self.structs.len()),
            ("functions", data.functions.len(), self.functions.len()),
            ("constants", data.constants.len(), self.constants.len()),
        ] {
            assert!(len > 0 || bound == 0, "{}: no {what}", self.file());
        }
        Check { spec: self, data }
    }

    /// Asserts that no two items of the crate share a name: functions, the symbols that differ
    /// from their API names, constants, typedefs and structs.
    pub fn assert_unique_names(&self) {
        let mut names: Vec<&str> = self.functions.iter().map(|d| d.name).collect();
        names.extend(
            self.functions
                .iter()
                .filter(|d| d.symbol != d.name)
                .map(|d| d.symbol),
        );
        names.extend(self.constants.iter().map(|c| c.name));
        names.extend(self.typedefs.iter().map(|t| t.name));
        names.extend(self.structs.iter().map(|s| s.name));
        let mut seen = BTreeSet::new();
        let twice: Vec<&str> = names.into_iter().filter(|n| !seen.insert(*n)).collect();
        assert!(twice.is_empty(), "names bound twice: {twice:?}");
    }

    /// The size of the Rust struct whose C name is `c_name`, and its fields' offsets: what a
    /// crate pins against the layout its vendor documents.
    pub fn rust_layout(&self, c_name: &str) -> (usize, Vec<usize>) {
        let s = self
            .structs
            .iter()
            .find(|s| s.c_name == c_name)
            .unwrap_or_else(|| panic!("struct {c_name} is not bound"));
        (s.size, s.fields.iter().map(|f| (f.offset)()).collect())
    }

    /// Runs the `extract_decls.py` beside the data file on the headers in `include` and returns
    /// what it wrote, or why it failed; `None` (after saying so) where there is no `python3`.
    pub fn extract(&self, include: &Path) -> Option<Result<String, String>> {
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let dir = Path::new(self.path).parent().unwrap_or(Path::new("."));
        // One output per run: the tests of one process may extract at the same time.
        let out = std::env::temp_dir().join(format!(
            "{}.{}.{}",
            self.file(),
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        ));
        let status = match std::process::Command::new("python3")
            .arg(dir.join("extract_decls.py"))
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

    /// Asserts that `fresh`, a data file extracted from `header` (for the message), states the
    /// same facts as the committed one, comment lines aside, naming the lines that differ.
    pub fn assert_same_facts(&self, fresh: &str, header: &str) {
        let committed =
            std::fs::read_to_string(self.path).unwrap_or_else(|e| panic!("{}: {e}", self.path));
        let (committed, fresh) = (facts(&committed), facts(fresh));
        let only_in = |a: &[String], b: &[String]| -> Vec<String> {
            a.iter().filter(|l| !b.contains(l)).cloned().collect()
        };
        let file = self.file();
        assert!(
            committed == fresh,
            "{file} differs from {header}: regenerate it (see its header) and rebind.\n\
             only in {file}: {:#?}\nonly in the header: {:#?}",
            only_in(&committed, &fresh),
            only_in(&fresh, &committed)
        );
    }
}

/// The data lines of a data file (comments dropped), in order.
pub fn facts(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(String::from)
        .collect()
}

/// Splits a parameter list at the commas outside parentheses (a function pointer parameter's
/// own parameters stay with it).
fn split_params(params: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut depth = 0usize;
    for ch in params.chars() {
        match ch {
            ',' if depth == 0 => parts.push(String::new()),
            _ => {
                match ch {
                    '(' => depth += 1,
                    ')' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                parts.last_mut().expect("parts starts non-empty").push(ch);
            }
        }
    }
    parts
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}

/// Size and alignment of a Rust scalar a C scalar may bind as, on this target.
fn rust_scalar_layout(rust: &str) -> Option<(usize, usize)> {
    use std::mem::{align_of, size_of};
    Some(match rust {
        "u8" | "i8" | "c_char" => (1, 1),
        "u16" | "i16" => (size_of::<u16>(), align_of::<u16>()),
        "u32" | "i32" => (size_of::<u32>(), align_of::<u32>()),
        "u64" | "i64" => (size_of::<u64>(), align_of::<u64>()),
        "usize" | "isize" => (size_of::<usize>(), align_of::<usize>()),
        "f32" => (size_of::<f32>(), align_of::<f32>()),
        "f64" => (size_of::<f64>(), align_of::<f64>()),
        _ => return None,
    })
}

impl Check<'_> {
    fn file(&self) -> &'static str {
        self.spec.file()
    }

    fn scalar(&self, c: &str) -> Option<&'static str> {
        self.spec
            .scalars
            .iter()
            .find(|(name, _)| *name == c)
            .map(|(_, rust)| *rust)
    }

    /// The Rust name of a struct of the data (cuda's `CUmemAllocationProp.allocFlags` is
    /// `CUmemAllocationProp_flags`).
    fn rust_struct_name(&self, c_name: &str) -> &'static str {
        self.spec
            .structs
            .iter()
            .find(|s| s.c_name == c_name)
            .unwrap_or_else(|| panic!("struct {c_name} of {} is not bound", self.file()))
            .name
    }

    /// The Rust type a C type of the data binds as, spelled like `stringify!` spells a type,
    /// with aliases resolved the way [`rust_canon`](Check::rust_canon) resolves them: handles
    /// and integers to what they alias, enums to `u32`, opaque structs behind pointers to
    /// `c_void`, structs and callback typedefs by name.
    pub fn c_to_rust(&self, c: &str) -> String {
        if c == "enum" {
            return "u32".into();
        }
        if let Some((ret, params)) = c.split_once(" (*)(") {
            let params = params
                .strip_suffix(')')
                .unwrap_or_else(|| panic!("C type '{c}': a function pointer's parameters"));
            let params: Vec<String> = split_params(params)
                .iter()
                .map(|p| self.c_to_rust(p))
                .collect();
            let ret = match ret {
                "void" => String::new(),
                r => format!(" -> {}", self.c_to_rust(r)),
            };
            return format!("unsafe extern \"C\" fn({}){ret}", params.join(", "));
        }
        if let Some((element, count)) = c.strip_suffix(']').and_then(|c| c.split_once('[')) {
            return format!("[{}; {count}]", self.c_to_rust(element));
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
        let base = base.join(" ");
        let mut rust = match self.scalar(&base) {
            Some(rust) => rust.to_string(),
            // A struct the header never defines, known only through pointers (CUctx_st).
            None if base.starts_with("struct ") && stars > 0 => "c_void".into(),
            None => match self.data.typedefs.get(&base) {
                Some(def) if def.contains("(*)") => base,
                Some(def) => self.c_to_rust(def),
                None if self.data.structs.contains_key(&base) => {
                    self.rust_struct_name(&base).to_string()
                }
                None => panic!(
                    "C type '{c}': '{base}' is neither a known scalar nor in {}",
                    self.file()
                ),
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
    ///
    /// A function pointer is written as [`c_to_rust`](Check::c_to_rust) writes one: parameter
    /// names dropped, each type resolved, and an `Option` around it (the nullable function
    /// pointer of a C prototype, the same in memory) taken off.
    pub fn rust_canon(&self, rust: &str) -> String {
        let rust = rust.replace("* mut", "*mut").replace("* const", "*const");
        if let Some(inner) = rust
            .strip_prefix("Option")
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix('<'))
            .and_then(|r| r.strip_suffix('>'))
            .map(str::trim)
            .filter(|r| r.starts_with("unsafe"))
        {
            return self.rust_canon(inner);
        }
        if rust.starts_with("unsafe") {
            return self.fn_pointer_canon(&rust);
        }
        if let Some((element, count)) = rust
            .strip_prefix('[')
            .and_then(|r| r.strip_suffix(']'))
            .and_then(|r| r.rsplit_once(';'))
        {
            return format!("[{}; {}]", self.rust_canon(element.trim()), count.trim());
        }
        let mut tokens: Vec<&str> = rust.split_whitespace().collect();
        let base = tokens.pop().unwrap_or_else(|| panic!("an empty Rust type"));
        let resolved = match self.spec.typedefs.iter().find(|t| t.name == base) {
            Some(t) if !t.rust_def.starts_with("unsafe") => self.rust_canon(t.rust_def),
            _ => base.to_string(),
        };
        tokens
            .iter()
            .rev()
            .fold(resolved, |inner, p| format!("{p} {inner}"))
    }

    /// `unsafe extern "C" fn(name: T, ...) -> R` as `unsafe extern "C" fn(T, ...) -> R`, each
    /// type through [`rust_canon`](Check::rust_canon); kept as it is (spaces normalised) where
    /// it does not read as one.
    fn fn_pointer_canon(&self, rust: &str) -> String {
        let spaced = rust.split_whitespace().collect::<Vec<_>>().join(" ");
        let Some((head, rest)) = spaced.split_once("fn") else {
            return spaced;
        };
        let Some((params, ret)) = rest
            .trim()
            .strip_prefix('(')
            .and_then(|r| r.rsplit_once(')'))
        else {
            return spaced;
        };
        let params: Vec<String> = split_params(params)
            .iter()
            .map(|p| match p.split_once(':') {
                Some((name, ty)) if !ty.starts_with(':') && !name.trim().contains(' ') => ty.trim(),
                _ => p.as_str(),
            })
            .map(|p| self.rust_canon(p))
            .collect();
        let ret = match ret.trim().strip_prefix("->") {
            Some(r) => format!(" -> {}", self.rust_canon(r.trim())),
            None => String::new(),
        };
        format!("{} fn({}){ret}", head.trim(), params.join(", "))
    }

    /// Size and alignment of a C type of the data on this target (an enum whose values fit an
    /// `int` is an `int`; [`constants_match`](Check::constants_match) checks they do).
    pub fn c_size_align(&self, c: &str) -> (usize, usize) {
        let ptr = (std::mem::size_of::<usize>(), std::mem::align_of::<usize>());
        if c.ends_with('*') || c.contains("(*)") {
            return ptr;
        }
        if let Some((element, count)) = c.strip_suffix(']').and_then(|c| c.split_once('[')) {
            let (size, align) = self.c_size_align(element);
            let count: usize = count
                .parse()
                .unwrap_or_else(|_| panic!("C type '{c}': an array length"));
            return (size * count, align);
        }
        if let Some(rust) = self.scalar(c) {
            return rust_scalar_layout(rust)
                .unwrap_or_else(|| panic!("C type '{c}' binds as {rust}, which has no size"));
        }
        match self.data.typedefs.get(c).map(String::as_str) {
            Some("enum") => (4, 4),
            Some(def) => self.c_size_align(def),
            None => {
                let (size, align, _) = self.c_layout(c);
                (size, align)
            }
        }
    }

    /// The C layout of a struct of the data: size, alignment, field offsets.
    pub fn c_layout(&self, name: &str) -> (usize, usize, Vec<usize>) {
        let fields = self
            .data
            .structs
            .get(name)
            .unwrap_or_else(|| panic!("struct {name} not in {}", self.file()));
        let (mut offset, mut align, mut offsets) = (0usize, 1usize, Vec::new());
        for (ty, _) in fields {
            let (size, a) = self.c_size_align(ty);
            offset = offset.next_multiple_of(a);
            offsets.push(offset);
            offset += size;
            align = align.max(a);
        }
        (offset.next_multiple_of(align), align, offsets)
    }

    /// The typedefs bound are the data's, each with the data's C definition and a Rust
    /// definition that is that C type.
    pub fn typedefs_match(&self) {
        let file = self.file();
        let ours: BTreeSet<&str> = self.spec.typedefs.iter().map(|t| t.name).collect();
        let theirs: BTreeSet<&str> = self.data.typedefs.keys().map(String::as_str).collect();
        assert_eq!(ours, theirs, "typedefs bound vs typedefs in {file}");
        for t in self.spec.typedefs {
            let c = &self.data.typedefs[t.name];
            assert_eq!(t.c_def, c, "typedef {}: C definition", t.name);
            assert_eq!(
                self.rust_canon(t.rust_def),
                self.c_to_rust(c),
                "typedef {}: Rust type",
                t.name
            );
        }
    }

    /// The structs bound are the data's, with its fields in its order, each of a Rust type that
    /// is the field's C type at the offset C gives it, and the size and alignment C gives the
    /// struct.
    pub fn structs_match(&self) {
        let file = self.file();
        let ours: BTreeSet<&str> = self.spec.structs.iter().map(|s| s.c_name).collect();
        let theirs: BTreeSet<&str> = self.data.structs.keys().map(String::as_str).collect();
        assert_eq!(ours, theirs, "structs bound vs structs in {file}");
        for s in self.spec.structs {
            let fields = &self.data.structs[s.c_name];
            let names: Vec<&str> = s.fields.iter().map(|f| f.c_name).collect();
            let c_names: Vec<&str> = fields.iter().map(|(_, n)| n.as_str()).collect();
            assert_eq!(names, c_names, "struct {}: fields", s.c_name);
            let (size, align, offsets) = self.c_layout(s.c_name);
            assert_eq!(
                (s.size, s.align),
                (size, align),
                "struct {}: size and alignment",
                s.c_name
            );
            for ((f, (c_type, _)), c_offset) in s.fields.iter().zip(fields).zip(offsets) {
                assert_eq!(
                    self.rust_canon(f.rust_type),
                    self.c_to_rust(c_type),
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
    }

    /// The functions bound are the data's, each resolved from the data's symbol, with its C
    /// return and parameter types and Rust types that are those.
    pub fn functions_match(&self) {
        let file = self.file();
        let mut ours: Vec<&str> = self.spec.functions.iter().map(|d| d.name).collect();
        ours.sort_unstable();
        let theirs: Vec<&str> = self.data.functions.keys().map(String::as_str).collect();
        assert_eq!(ours, theirs, "functions bound vs functions in {file}");
        for d in self.spec.functions {
            let f = &self.data.functions[d.name];
            assert_eq!(d.symbol, f.symbol, "{}: ABI symbol", d.name);
            assert_eq!(d.c_ret, f.ret, "{}: C return type", d.name);
            assert_eq!(
                d.c_params,
                f.params.as_slice(),
                "{}: C parameter types",
                d.name
            );
            self.rust_types_match(d.name, d.rust_ret, self.c_to_rust(&f.ret), d.rust_params, f);
        }
    }

    /// The Rust types of function `name`, return and parameters, are those of `f`, the data's
    /// prototype; `ret` is the Rust type its C return type binds as.
    fn rust_types_match(
        &self,
        name: &str,
        rust_ret: &str,
        ret: String,
        rust_params: &[&str],
        f: &Function,
    ) {
        assert_eq!(
            self.rust_canon(rust_ret).replace(' ', ""),
            ret.replace(' ', ""),
            "{name}: Rust return type"
        );
        assert_eq!(
            rust_params.len(),
            f.params.len(),
            "{name}: parameter count (C: {:?})",
            f.params
        );
        for (i, (rust, c)) in rust_params.iter().zip(&f.params).enumerate() {
            assert_eq!(
                self.rust_canon(rust),
                self.c_to_rust(c),
                "{name}: parameter {i} (C: {c})"
            );
        }
    }

    /// Each function a crate links (`signatures`) is a function of the data under its symbol,
    /// with as many parameters, and Rust types that are the data's C types (a C `void` return
    /// is `()`). The data may declare more: a crate may bind part of a library's API.
    pub fn signatures_match(&self, signatures: &[Signature]) {
        let file = self.file();
        assert!(
            !signatures.is_empty(),
            "no signatures to check against {file}"
        );
        let mut seen = BTreeSet::new();
        for s in signatures {
            assert!(seen.insert(s.symbol), "{}: declared twice", s.symbol);
            let f = self
                .data
                .functions
                .get(s.symbol)
                .unwrap_or_else(|| panic!("{}: not a function of {file}", s.symbol));
            let ret = match f.ret.as_str() {
                "void" => "()".to_string(),
                c => self.c_to_rust(c),
            };
            self.rust_types_match(s.symbol, s.rust_ret, ret, s.rust_params, f);
        }
    }

    /// The constants bound are the data's, with its values, each of a Rust type that is its C
    /// type, and bound with that typedef by name where the C type is one (an enumerator with
    /// its enum); an enum's values lie in `0..=INT_MAX`, the range that makes it a `u32`-sized
    /// `int`.
    pub fn constants_match(&self) {
        let file = self.file();
        let mut ours: Vec<&str> = self.spec.constants.iter().map(|c| c.name).collect();
        ours.sort_unstable();
        let theirs: Vec<&str> = self.data.constants.keys().map(String::as_str).collect();
        assert_eq!(ours, theirs, "constants bound vs constants in {file}");
        for c in self.spec.constants {
            let (c_type, value) = &self.data.constants[c.name];
            assert_eq!(c.value, *value, "{}: value", c.name);
            if self.data.typedefs.contains_key(c_type) {
                assert_eq!(c.rust_type, c_type, "{}: bound with its typedef", c.name);
            }
            assert_eq!(
                self.rust_canon(c.rust_type),
                self.c_to_rust(c_type),
                "{}: type",
                c.name
            );
            if self.data.typedefs.get(c_type).map(String::as_str) == Some("enum") {
                assert!(
                    (0..=i64::from(i32::MAX)).contains(value),
                    "{}: an enum past int",
                    c.name
                );
            }
        }
    }
}
