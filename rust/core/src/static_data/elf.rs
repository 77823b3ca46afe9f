//! What the loader tells about the executable: its program headers as `dl_iterate_phdr` reports
//! them, its dynamic section (`DT_SONAME`, `DT_NEEDED`), its GNU build-id, and from those the
//! span of its writable data that can be made symmetric (past `PT_GNU_RELRO`).
//!
//! Only reads: it never maps, moves or writes anything, and reads loaded memory only inside the
//! object's own loaded segments.

use std::ffi::{c_void, CStr};
use std::fmt::Write as _;

// ELF constants the libc crate does not carry (dynamic tags, note type).
const DT_NULL: i64 = 0;
const DT_NEEDED: i64 = 1;
const DT_STRTAB: i64 = 5;
const DT_SONAME: i64 = 14;
const NT_GNU_BUILD_ID: u32 = 3;

/// A page-aligned address range `[start, start + len)` in this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Range {
    pub(super) start: usize,
    pub(super) len: usize,
    /// Offset from which the loader filled the range with anonymous zero pages (`.bss` past
    /// the file's bytes): a page there that was never touched is known to be zero.
    pub(super) zero_fill_at: usize,
}

/// The part of a program header this module reads (addresses are link-time, without bias).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Segment {
    kind: u32,
    flags: u32,
    vaddr: usize,
    filesz: usize,
    memsz: usize,
    align: usize,
}

impl Segment {
    fn end(&self) -> usize {
        self.vaddr.saturating_add(self.memsz)
    }
}

/// One loaded ELF object as `dl_iterate_phdr` reports it.
#[derive(Debug, Default)]
pub(super) struct Object {
    /// Path it was loaded from ("" for the executable).
    name: String,
    /// Load bias.
    pub(super) bias: usize,
    pub(super) segments: Vec<Segment>,
    soname: Option<String>,
    needed: Vec<String>,
    /// This library's code lies in it.
    holds_self: bool,
}

impl Object {
    /// End of the loaded segment holding the run-time address `addr`, if one does.
    fn loaded_end(&self, addr: usize) -> Option<usize> {
        self.segments.iter().find_map(|s| {
            let lo = self.bias.saturating_add(s.vaddr);
            let hi = self.bias.saturating_add(s.end());
            (s.kind == libc::PT_LOAD && (lo..hi).contains(&addr)).then_some(hi)
        })
    }
}

fn align_down(x: usize, page: usize) -> usize {
    x & !(page - 1)
}

fn align_up(x: usize, page: usize) -> Option<usize> {
    Some(x.checked_add(page - 1)? & !(page - 1))
}

/// The symmetric range of an executable from its program headers: from the end of
/// `PT_GNU_RELRO` (or the page of the segment's start when the program has no RELRO) to the page
/// end of the writable `PT_LOAD` that holds `.data`/`.bss`: the first writable one that reaches
/// past RELRO (GNU ld has one writable segment that starts with RELRO; lld and mold give RELRO a
/// segment of its own). Returns the range (bias added) and a note for the debug log when RELRO
/// does not end on a page boundary (then the partial page stays private, as the loader leaves it
/// writable and half read-only data).
pub(super) fn symmetric_range(
    segments: &[Segment],
    bias: usize,
    page: usize,
) -> std::result::Result<(Range, Option<String>), String> {
    let relro = segments.iter().find(|s| s.kind == libc::PT_GNU_RELRO);
    let relro_end = relro.map_or(0, Segment::end);
    let data = segments
        .iter()
        .filter(|s| s.kind == libc::PT_LOAD && s.flags & libc::PF_W != 0 && s.memsz > 0)
        .find(|s| s.end() > relro_end)
        .ok_or("the executable has no writable data segment past its RELRO part")?;
    let mut start = align_down(data.vaddr, page);
    let mut note = None;
    if let Some(relro) = relro.filter(|r| r.vaddr < data.end() && r.end() > data.vaddr) {
        let up = align_up(relro.end(), page).ok_or("PT_GNU_RELRO ends past the address space")?;
        if up != relro.end() {
            note = Some(format!(
                "PT_GNU_RELRO ends at {:#x}, not on a page boundary; symmetric static data \
                 starts at the next page, {up:#x}",
                relro.end()
            ));
        }
        start = start.max(up);
    }
    let end = align_up(data.end(), page).ok_or("the data segment ends past the address space")?;
    if start >= end {
        return Err("the executable has no writable data past its RELRO part".into());
    }
    let len = end - start;
    let file_end = align_up(data.vaddr.saturating_add(data.filesz.min(data.memsz)), page)
        .ok_or("the data segment ends past the address space")?;
    let zero_fill_at = file_end.clamp(start, end) - start;
    let start = start
        .checked_add(bias)
        .ok_or("the data segment lies past the address space")?;
    Ok((
        Range {
            start,
            len,
            zero_fill_at,
        },
        note,
    ))
}

/// Whether the object holding this library was loaded at program start: reachable from the
/// executable's `DT_NEEDED` list (or `LD_PRELOAD`) through the `DT_NEEDED` lists of the objects
/// found there. An object loaded by `dlopen` is reachable only from other `dlopen`ed objects.
pub(super) fn loaded_at_start(objects: &[Object], preload: &[String]) -> bool {
    let Some(me) = objects.iter().position(|o| o.holds_self) else {
        return false;
    };
    if me == 0 {
        return true; // linked into the executable itself
    }
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    let matches = |o: &Object, wanted: &str| {
        let wanted = base(wanted);
        o.soname.as_deref() == Some(wanted.as_str()) || base(&o.name) == wanted
    };
    let mut reached = vec![false; objects.len()];
    reached[0] = true;
    let mut todo: Vec<String> = objects[0].needed.iter().chain(preload).cloned().collect();
    while let Some(name) = todo.pop() {
        for (i, o) in objects.iter().enumerate().skip(1) {
            if !reached[i] && matches(o, &name) {
                reached[i] = true;
                todo.extend(o.needed.iter().cloned());
            }
        }
    }
    reached[me]
}

/// The GNU build-id from the bytes of a `PT_NOTE` segment aligned to `align`.
fn build_id(notes: &[u8], align: usize) -> Option<Vec<u8>> {
    let align = align.max(4);
    let pad = |n: usize| n.checked_add(align - 1).map(|n| n & !(align - 1));
    let word = |b: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let mut at = 0;
    while at + 12 <= notes.len() {
        let namesz = word(notes, at)? as usize;
        let descsz = word(notes, at + 4)? as usize;
        let kind = word(notes, at + 8)?;
        let name_at = at + 12;
        let desc_at = name_at.checked_add(pad(namesz)?)?;
        let next = desc_at.checked_add(pad(descsz)?)?;
        let name = notes.get(name_at..name_at + namesz)?;
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" {
            return notes.get(desc_at..desc_at + descsz).map(<[u8]>::to_vec);
        }
        at = next;
    }
    None
}

/// Object names in `LD_PRELOAD` (loaded at start like `DT_NEEDED` entries of the executable).
pub(super) fn preload_names() -> Vec<String> {
    std::env::var("LD_PRELOAD")
        .unwrap_or_default()
        .split([':', ' '])
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Every loaded object, the executable first (glibc reports it first).
pub(super) fn loaded_objects() -> Vec<Object> {
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> libc::c_int {
        // SAFETY: `data` is the `&mut Vec<Object>` passed below, alive for the whole call of
        // dl_iterate_phdr, and `info` points to a record glibc keeps valid during this callback.
        let (objects, info) = unsafe { (&mut *(data as *mut Vec<Object>), &*info) };
        // SAFETY: as above; the record's fields describe an object that stays loaded while
        // dl_iterate_phdr holds the loader lock.
        objects.push(unsafe { read_object(info) });
        0
    }
    let mut objects: Vec<Object> = Vec::new();
    // SAFETY: the callback only reads the records it is given and appends to `objects`, which
    // outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut objects as *mut Vec<Object> as *mut c_void) };
    objects
}

/// Reads one `dl_iterate_phdr` record: program headers, `DT_SONAME`/`DT_NEEDED`, and whether this
/// library's code lies in it.
///
/// # Safety
/// `info` must be a record handed to a `dl_iterate_phdr` callback, used during that callback.
unsafe fn read_object(info: &libc::dl_phdr_info) -> Object {
    let bias = info.dlpi_addr as usize;
    let name = if info.dlpi_name.is_null() {
        String::new()
    } else {
        // SAFETY: glibc's dlpi_name is a NUL-terminated string owned by the link map.
        unsafe { CStr::from_ptr(info.dlpi_name) }
            .to_string_lossy()
            .into_owned()
    };
    let phdrs: &[libc::Elf64_Phdr] = if info.dlpi_phdr.is_null() {
        &[]
    } else {
        // SAFETY: dlpi_phdr points to dlpi_phnum program headers of the loaded object.
        unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
    };
    let segments: Vec<Segment> = phdrs
        .iter()
        .map(|p| Segment {
            kind: p.p_type,
            flags: p.p_flags,
            vaddr: p.p_vaddr as usize,
            filesz: p.p_filesz as usize,
            memsz: p.p_memsz as usize,
            align: p.p_align as usize,
        })
        .collect();
    let mut object = Object {
        name,
        bias,
        segments,
        ..Object::default()
    };
    object.holds_self = object.loaded_end(super::prepare as fn() as usize).is_some();
    // SAFETY: the object is loaded (see the function's contract).
    unsafe { read_dynamic(&mut object) };
    object
}

/// Fills `soname` and `needed` from the object's dynamic section, reading strings only inside
/// its loaded segments.
///
/// # Safety
/// `object` must describe an object that stays loaded during the call.
unsafe fn read_dynamic(object: &mut Object) {
    #[repr(C)]
    struct Dyn {
        tag: i64,
        val: u64,
    }
    let Some(dynamic) = object.segments.iter().find(|s| s.kind == libc::PT_DYNAMIC) else {
        return;
    };
    let start = object.bias.saturating_add(dynamic.vaddr);
    let count = dynamic.memsz / std::mem::size_of::<Dyn>();
    let fits = object
        .loaded_end(start)
        .is_some_and(|end| end - start >= count * std::mem::size_of::<Dyn>());
    if !fits || start % std::mem::align_of::<Dyn>() != 0 {
        return;
    }
    // SAFETY: the `count` entries of PT_DYNAMIC lie inside one loaded segment of the object
    // (checked above) and are aligned; the object stays loaded (the function's contract).
    let entries = unsafe { std::slice::from_raw_parts(start as *const Dyn, count) };
    let entries = &entries[..entries
        .iter()
        .position(|d| d.tag == DT_NULL)
        .unwrap_or(count)];
    // glibc adds the bias to DT_STRTAB in place on x86_64 (not for read-only dynamic sections
    // such as the vDSO's): a value below the bias is still unrelocated.
    let Some(strtab) = entries.iter().find(|d| d.tag == DT_STRTAB).map(|d| {
        let v = d.val as usize;
        if v < object.bias {
            v + object.bias
        } else {
            v
        }
    }) else {
        return;
    };
    let string = |offset: u64| -> Option<String> {
        let at = strtab.checked_add(usize::try_from(offset).ok()?)?;
        let end = object.loaded_end(at)?;
        // SAFETY: [at, end) lies inside one loaded segment of the object (checked just above).
        let bytes = unsafe { std::slice::from_raw_parts(at as *const u8, end - at) };
        let len = bytes.iter().position(|b| *b == 0)?;
        Some(String::from_utf8_lossy(&bytes[..len]).into_owned())
    };
    let (mut soname, mut needed) = (None, Vec::new());
    for d in entries {
        match d.tag {
            DT_NEEDED => needed.extend(string(d.val)),
            DT_SONAME => soname = string(d.val),
            _ => {}
        }
    }
    object.soname = soname;
    object.needed = needed;
}

/// Names the executable: its GNU build-id, or else its path, size and data segment.
pub(super) fn identity(exe: &Object) -> String {
    for note in exe.segments.iter().filter(|s| s.kind == libc::PT_NOTE) {
        let start = exe.bias.saturating_add(note.vaddr);
        let fits = exe
            .loaded_end(start)
            .is_some_and(|end| end - start >= note.memsz);
        if !fits {
            continue;
        }
        // SAFETY: the note lies inside one of the executable's loaded segments (checked above),
        // which stay mapped for the life of the process.
        let bytes = unsafe { std::slice::from_raw_parts(start as *const u8, note.memsz) };
        if let Some(id) = build_id(bytes, note.align) {
            let mut hex = String::from("build-id ");
            for b in id {
                // Writing to a String cannot fail.
                let _ = write!(hex, "{b:02x}");
            }
            return hex;
        }
    }
    let path = std::fs::read_link("/proc/self/exe")
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "an unknown path".into());
    let size = std::fs::metadata("/proc/self/exe").map_or(0, |m| m.len());
    let data = exe
        .segments
        .iter()
        .filter(|s| s.kind == libc::PT_LOAD && s.flags & libc::PF_W != 0)
        .map(|s| format!("{:#x}+{}", s.vaddr, s.memsz))
        .collect::<Vec<_>>()
        .join(",");
    format!("no build-id, executable {path} of {size} bytes, data segments {data}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const RW: u32 = libc::PF_R | libc::PF_W;
    const PAGE: usize = 4096;

    fn seg(kind: u32, flags: u32, vaddr: usize, memsz: usize) -> Segment {
        Segment {
            kind,
            flags,
            vaddr,
            filesz: memsz,
            memsz,
            align: PAGE,
        }
    }

    fn range(start: usize, len: usize, zero_fill_at: usize) -> Range {
        Range {
            start,
            len,
            zero_fill_at,
        }
    }

    /// `s` with only `filesz` bytes from the file (the rest is `.bss`).
    fn with_filesz(s: Segment, filesz: usize) -> Segment {
        Segment { filesz, ..s }
    }

    fn gnu_ld(base: usize) -> Vec<Segment> {
        // readelf -l of a PIE built here by gcc 12 / GNU ld (tests/mp/c_api).
        vec![
            seg(libc::PT_LOAD, libc::PF_R, base, 0xcc0),
            seg(libc::PT_LOAD, libc::PF_R | libc::PF_X, base + 0x1000, 0xb15),
            with_filesz(seg(libc::PT_LOAD, RW, base + 0x3db0, 0x340), 0x328),
            seg(libc::PT_DYNAMIC, RW, base + 0x3dc0, 0x200),
            seg(libc::PT_GNU_RELRO, libc::PF_R, base + 0x3db0, 0x250),
        ]
    }

    #[test]
    fn range_of_a_gnu_ld_pie_starts_at_relro_end() {
        let (r, note) = symmetric_range(&gnu_ld(0), 0x5555_5555_0000, PAGE).unwrap();
        assert_eq!(r, range(0x5555_5555_4000, 0x1000, 0x1000));
        assert_eq!(note, None);
    }

    #[test]
    fn range_of_a_non_pie_uses_absolute_addresses() {
        let (r, _) = symmetric_range(&gnu_ld(0x40_0000), 0, PAGE).unwrap();
        assert_eq!(r, range(0x40_4000, 0x1000, 0x1000));
    }

    #[test]
    fn range_with_relro_in_its_own_segment_takes_the_next_writable_one() {
        // lld: RELRO has its own RW PT_LOAD; .data and a 1 MiB .bss follow in another.
        let segs = vec![
            seg(libc::PT_LOAD, libc::PF_R | libc::PF_X, 0x1000, 0x2000),
            seg(libc::PT_LOAD, RW, 0x3000, 0x800),
            seg(libc::PT_GNU_RELRO, libc::PF_R, 0x3000, 0x1000),
            with_filesz(seg(libc::PT_LOAD, RW, 0x4800, 0x10_0010), 0x10),
        ];
        let (r, note) = symmetric_range(&segs, 0, PAGE).unwrap();
        assert_eq!(r, range(0x4000, 0x10_1000, 0x1000));
        assert_eq!(note, None);
    }

    #[test]
    fn range_rounds_an_unaligned_relro_end_up_and_says_so() {
        let segs = vec![
            seg(libc::PT_LOAD, RW, 0x3db0, 0x2000),
            seg(libc::PT_GNU_RELRO, libc::PF_R, 0x3db0, 0x300),
        ];
        let (r, note) = symmetric_range(&segs, 0, PAGE).unwrap();
        assert_eq!(r, range(0x5000, 0x1000, 0x1000));
        assert!(note.unwrap().contains("not on a page boundary"));
    }

    #[test]
    fn range_without_relro_starts_at_the_segment_page() {
        let segs = vec![with_filesz(seg(libc::PT_LOAD, RW, 0x3e10, 0x1300), 0x100)];
        let (r, _) = symmetric_range(&segs, 0x1000_0000, PAGE).unwrap();
        assert_eq!(r, range(0x1000_3000, 0x3000, 0x1000));
    }

    #[test]
    fn range_is_refused_without_writable_data_past_relro() {
        let no_rw = vec![seg(libc::PT_LOAD, libc::PF_R, 0, 0x1000)];
        assert!(symmetric_range(&no_rw, 0, PAGE).is_err());
        let all_relro = vec![
            seg(libc::PT_LOAD, RW, 0x3000, 0x1000),
            seg(libc::PT_GNU_RELRO, libc::PF_R, 0x3000, 0x1000),
        ];
        assert!(symmetric_range(&all_relro, 0, PAGE).is_err());
    }

    fn object(name: &str, soname: Option<&str>, needed: &[&str], holds_self: bool) -> Object {
        Object {
            name: name.into(),
            soname: soname.map(str::to_string),
            needed: needed.iter().map(|s| s.to_string()).collect(),
            holds_self,
            ..Object::default()
        }
    }

    #[test]
    fn linked_library_is_loaded_at_start() {
        let objects = vec![
            object("", None, &["libshmem.so.0", "libc.so.6"], false),
            object("linux-vdso.so.1", Some("linux-vdso.so.1"), &[], false),
            object(
                "/b/libshmem.so.0",
                Some("libshmem.so.0"),
                &["libc.so.6"],
                true,
            ),
            object("/lib/libc.so.6", Some("libc.so.6"), &[], false),
        ];
        assert!(loaded_at_start(&objects, &[]));
    }

    #[test]
    fn library_needed_by_a_needed_library_is_loaded_at_start() {
        let objects = vec![
            object("", None, &["libapp.so"], false),
            object("/b/libapp.so", Some("libapp.so"), &["libshmem.so.0"], false),
            object("/b/libshmem.so.0", Some("libshmem.so.0"), &[], true),
        ];
        assert!(loaded_at_start(&objects, &[]));
    }

    #[test]
    fn dlopened_library_is_not_loaded_at_start() {
        // python3 dlopens torch, which needs libshmem.
        let objects = vec![
            object("", None, &["libc.so.6", "libm.so.6"], false),
            object("/lib/libc.so.6", Some("libc.so.6"), &[], false),
            object(
                "/t/libtorch.so",
                Some("libtorch.so"),
                &["libshmem.so"],
                false,
            ),
            object(
                "/b/libshmem.so",
                Some("libshmem.so.0"),
                &["libc.so.6"],
                true,
            ),
        ];
        assert!(!loaded_at_start(&objects, &[]));
        assert!(loaded_at_start(&objects, &["/b/libshmem.so".to_string()]));
    }

    #[test]
    fn code_inside_the_executable_counts_as_loaded_at_start() {
        assert!(loaded_at_start(&[object("", None, &[], true)], &[]));
        assert!(!loaded_at_start(&[object("", None, &[], false)], &[]));
    }

    fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend((name.len() as u32).to_ne_bytes());
        out.extend((desc.len() as u32).to_ne_bytes());
        out.extend(kind.to_ne_bytes());
        out.extend(name);
        out.resize(out.len().next_multiple_of(4), 0);
        out.extend(desc);
        out.resize(out.len().next_multiple_of(4), 0);
        out
    }

    #[test]
    fn build_id_is_found_after_other_notes() {
        let mut bytes = note(b"GNU\0", 1, &[0, 0, 0, 0, 3, 0, 0, 0]); // ABI tag
        bytes.extend(note(b"GNU\0", NT_GNU_BUILD_ID, &[0xd1, 0xef, 0xfd]));
        assert_eq!(build_id(&bytes, 4), Some(vec![0xd1, 0xef, 0xfd]));
        assert_eq!(build_id(&bytes[..bytes.len() - 4], 4), None);
        assert_eq!(build_id(&note(b"Go\0\0", 3, &[1]), 4), None);
    }

    #[test]
    fn this_test_binary_has_a_range_holding_its_statics() {
        static mut IN_BSS: [u64; 4] = [0; 4];
        static mut IN_DATA: u64 = 7;
        let objects = loaded_objects();
        let exe = &objects[0];
        assert_eq!(exe.name, "");
        assert!(objects
            .iter()
            .any(|o| o.soname.as_deref() == Some("libc.so.6")));
        assert!(loaded_at_start(&objects, &[]));
        let (r, _) = symmetric_range(&exe.segments, exe.bias, PAGE).unwrap();
        for addr in [
            std::ptr::addr_of!(IN_BSS) as usize,
            std::ptr::addr_of!(IN_DATA) as usize,
        ] {
            assert!(
                (r.start..r.start + r.len).contains(&addr),
                "{addr:#x} in {r:?}"
            );
        }
        assert!(!identity(exe).is_empty());
    }
}
