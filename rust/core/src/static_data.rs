//! Symmetric global and static variables (OpenSHMEM requires them to be remotely accessible).
//!
//! Owns three things. [`prepare`], run by a library constructor before `main` and before any
//! user thread, moves the executable's writable data past `PT_GNU_RELRO` (its `.data`, `.bss`
//! and the libc objects copy-relocated there: `environ`, `stdout`, ...) into a memfd mapped
//! shared at the very same addresses, so every global keeps its address and value. Fork
//! handlers (`pthread_atfork`) give a forked child a private copy of that range again, taken at
//! the fork, or the child's writes (its `setenv` included) would change the parent. At init, [`exchange`]
//! hands the memfd to every peer, maps theirs, and decides for the whole job whether static
//! targets are symmetric: only if every PE moved its data and all run the same executable.
//!
//! The range is a segment of the host device whatever device holds the heap: the program's
//! globals are in host memory, and they stay at the addresses the loader gave them, so this
//! module maps its own range in place itself and only the export and the peers' imports go
//! through [`crate::device::host`].
//!
//! It must never move anything once user code may run concurrently (so never from `init`, and
//! by default not when libshmem arrives by `dlopen`), never fail loudly in the constructor (a
//! failure becomes the reason static targets are refused), and never allocate, lock or log in
//! the fork handlers (they run inside fork, the child's in a child of a threaded process).

use crate::bootstrap::Bootstrap;
use crate::device::host::Host;
use crate::device::{self, Device, Placement};
use crate::error::{Error, Result};
use crate::mapping;
use rustix::fd::{AsRawFd, OwnedFd};
use std::ffi::{c_void, CStr};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// Why static targets are refused when `SHMEM_SYMMETRIC_DATA=0`.
const OFF_BY_ENV: &str = "symmetric static data is off (SHMEM_SYMMETRIC_DATA=0)";
/// Why static targets are refused when libshmem was not loaded at program start.
const OFF_BY_DLOPEN: &str = "libshmem was loaded with dlopen, so global and static variables \
                             are not symmetric; use shmem_malloc'ed memory \
                             (SHMEM_SYMMETRIC_DATA=1 forces them symmetric)";
/// Why, when the library constructor never ran (libshmem's core linked some other way).
const NOT_PREPARED: &str = "libshmem's constructor did not run, so global and static variables \
                            are not symmetric";
/// Why, in a process forked from a PE (its copy of the data is private since the fork).
const FORKED_CHILD: &str = "this process was forked from a PE, so its global and static \
                            variables are private to it";

// ELF constants the libc crate does not carry (dynamic tags, note type).
const DT_NULL: i64 = 0;
const DT_NEEDED: i64 = 1;
const DT_STRTAB: i64 = 5;
const DT_SONAME: i64 = 14;
const NT_GNU_BUILD_ID: u32 = 3;

/// A page-aligned address range `[start, start + len)` in this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    start: usize,
    len: usize,
    /// Offset from which the loader filled the range with anonymous zero pages (`.bss` past
    /// the file's bytes): a page there that was never touched is known to be zero.
    zero_fill_at: usize,
}

/// The part of a program header this module reads (addresses are link-time, without bias).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
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
struct Object {
    /// Path it was loaded from ("" for the executable).
    name: String,
    /// Load bias.
    bias: usize,
    segments: Vec<Segment>,
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
fn symmetric_range(
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
fn loaded_at_start(objects: &[Object], preload: &[String]) -> bool {
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

/// Why this PE's global and static variables stayed private (not moved into shared memory).
/// Text, since the PEs tell each other in their announcements and the job state shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct NotMoved(String);

impl From<String> for NotMoved {
    fn from(why: String) -> Self {
        NotMoved(why)
    }
}

impl std::fmt::Display for NotMoved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for NotMoved {
    fn from(why: &str) -> Self {
        NotMoved(why.to_string())
    }
}

/// What one PE tells the others at init.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Announce {
    /// `Err(reason)` when this PE did not move its static data.
    moved: std::result::Result<(), NotMoved>,
    /// Bytes of symmetric static data (0 when unknown).
    len: usize,
    /// Which executable this is: "build-id <hex>", or path, size and segment when it has none.
    identity: String,
}

impl Announce {
    fn encode(&self) -> Vec<u8> {
        let identity = self.identity.replace('\n', "?");
        match &self.moved {
            Ok(()) => format!("moved\n{}\n{identity}", self.len),
            Err(NotMoved(reason)) => format!("off\n{}\n{identity}\n{reason}", self.len),
        }
        .into_bytes()
    }

    fn decode(bytes: &[u8]) -> Option<Announce> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut parts = text.splitn(4, '\n');
        let state = parts.next()?;
        let len = parts.next()?.parse().ok()?;
        let identity = parts.next()?.to_string();
        let moved = match (state, parts.next()) {
            ("moved", None) => Ok(()),
            ("off", Some(reason)) => Err(NotMoved::from(reason)),
            _ => return None,
        };
        Some(Announce {
            moved,
            len,
            identity,
        })
    }
}

/// Why static data is not symmetric in this job.
#[derive(Debug, PartialEq, Eq)]
enum Off {
    /// Some PE did not move its static data (the reason names it when it is not this PE).
    Skipped(String),
    /// The PEs run different executables, or their static data differs in size.
    Different(String),
}

/// The job-wide verdict from every PE's announcement. Every PE computes it from the same
/// allgathered list, so all reach the same on/off answer; the reason is told from this PE's side.
fn verdict(all: &[Announce], my_pe: usize) -> std::result::Result<(), Off> {
    let mine = &all[my_pe];
    if let Err(NotMoved(reason)) = &mine.moved {
        return Err(Off::Skipped(reason.clone()));
    }
    if let Some((pe, reason)) = all
        .iter()
        .enumerate()
        .find_map(|(pe, a)| a.moved.as_ref().err().map(|r| (pe, r)))
    {
        return Err(Off::Skipped(format!("on PE {pe}, {reason}")));
    }
    for (pe, other) in all.iter().enumerate() {
        if other.identity != mine.identity {
            return Err(Off::Different(format!(
                "PEs run different executables: PE {pe} has {}, this PE {}",
                other.identity, mine.identity
            )));
        }
        if other.len != mine.len {
            return Err(Off::Different(format!(
                "PEs disagree on the size of their global and static variables: PE {pe} has \
                 {} bytes, this PE {}",
                other.len, mine.len
            )));
        }
    }
    Ok(())
}

/// What [`prepare`] found and did, kept for [`exchange`].
#[derive(Debug)]
struct Prepared {
    /// The executable's symmetric range, moved or not (`None` when it has none).
    range: Option<Range>,
    /// The memfd now behind `range`, or why nothing was moved.
    moved: std::result::Result<OwnedFd, NotMoved>,
    identity: String,
    /// Things worth a debug line at init (the constructor does not log).
    notes: Vec<String>,
}

static PREPARED: OnceLock<Prepared> = OnceLock::new();

// What the fork handlers read: plain atomics, set once the move is done (CHILD_LEN last).
static CHILD_START: AtomicUsize = AtomicUsize::new(0);
static CHILD_LEN: AtomicUsize = AtomicUsize::new(0);
static CHILD_FD: AtomicI32 = AtomicI32::new(-1);
/// Set in a forked child once its copy is private: its static data is no longer the memfd.
static FORKED: AtomicBool = AtomicBool::new(false);

/// Moves the executable's static data into shared memory at the same addresses, or records why
/// not. Called once, from libshmem's constructor, before `main` and before user threads; never
/// panics, aborts or logs (notes wait for init's log).
pub fn prepare() {
    PREPARED.get_or_init(prepare_now);
}

fn prepare_now() -> Prepared {
    let mut notes = Vec::new();
    let mode = crate::env::symmetric_data().map_err(|e| e.to_string());
    let objects = loaded_objects();
    let Some(exe) = objects.first() else {
        return Prepared {
            range: None,
            moved: Err("dl_iterate_phdr reported no executable".into()),
            identity: "unknown executable".into(),
            notes,
        };
    };
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096);
    let range = symmetric_range(&exe.segments, exe.bias, page).map(|(range, note)| {
        notes.extend(note);
        range
    });
    let identity = identity(exe);
    let moved = match (&range, mode) {
        (Err(e), _) => Err(NotMoved(e.clone())),
        (_, Err(e)) => Err(NotMoved(e)),
        (Ok(_), Ok("0")) => Err(OFF_BY_ENV.into()),
        (Ok(_), Ok("auto")) if !loaded_at_start(&objects, &preload_names()) => {
            Err(OFF_BY_DLOPEN.into())
        }
        (Ok(range), Ok(_)) => move_to_memfd(*range, page).map_err(|e| NotMoved(e.to_string())),
    };
    if let (Ok(range), Ok(_)) = (&range, &moved) {
        notes.push(format!(
            "moved {} bytes of global and static variables at {:#x} into shared memory",
            range.len, range.start
        ));
    }
    Prepared {
        range: range.ok(),
        moved,
        identity,
        notes,
    }
}

/// Object names in `LD_PRELOAD` (loaded at start like `DT_NEEDED` entries of the executable).
fn preload_names() -> Vec<String> {
    std::env::var("LD_PRELOAD")
        .unwrap_or_default()
        .split([':', ' '])
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Every loaded object, the executable first (glibc reports it first).
fn loaded_objects() -> Vec<Object> {
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
    object.holds_self = object.loaded_end(prepare as fn() as usize).is_some();
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
fn identity(exe: &Object) -> String {
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

/// Copies `range` into a new memfd and maps the memfd over it, shared, at the same address.
/// Registers the fork handlers first, so no fork can see the range shared without them.
fn move_to_memfd(range: Range, page: usize) -> Result<OwnedFd> {
    static REGISTERED: AtomicBool = AtomicBool::new(false);
    if !REGISTERED.swap(true, Ordering::AcqRel) {
        // SAFETY: registers handlers that only use async-signal-safe system calls.
        let rc = unsafe {
            libc::pthread_atfork(
                Some(before_fork),
                Some(after_fork_in_parent),
                Some(after_fork_in_child),
            )
        };
        if rc != 0 {
            return Err(Error::os(
                "pthread_atfork (needed to make a fork safe)",
                std::io::Error::from_raw_os_error(rc),
            ));
        }
    }
    let fd = mapping::memfd("shmem-static-data", range.len)?;
    // SAFETY: the range is the executable's loaded writable data segment, mapped readable for
    // the life of the process; nothing writes it meanwhile (constructor: no other thread runs
    // user code yet), so a shared byte view of it races with nothing.
    let live = unsafe { std::slice::from_raw_parts(range.start as *const u8, range.len) };
    let untouched = untouched_zero_pages(range, page);
    copy_nonzero_pages(&fd, live, page, |i| {
        untouched.get(i).copied().unwrap_or(false)
    })
    .map_err(|e| Error::os("copying static data to a memfd", e))?;
    // SAFETY: replaces the executable's data pages by the memfd holding the same bytes; the
    // addresses, protection and contents stay the same, so every pointer into them stays valid.
    let mapped = unsafe {
        rustix::mm::mmap(
            range.start as *mut c_void,
            range.len,
            rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
            rustix::mm::MapFlags::SHARED | rustix::mm::MapFlags::FIXED,
            &fd,
            0,
        )
    };
    if let Err(e) = mapped {
        restore(range, &fd);
        return Err(Error::os(
            format!("mapping static data shared at {:#x}", range.start),
            e,
        ));
    }
    CHILD_START.store(range.start, Ordering::Release);
    CHILD_FD.store(fd.as_raw_fd(), Ordering::Release);
    CHILD_LEN.store(range.len, Ordering::Release);
    Ok(fd)
}

/// For each page of `range`, whether it is known to be zero without reading it: a page of the
/// zero-filled part that is neither present nor swapped out (`/proc/self/pagemap` bits 63 and
/// 62) was never touched. Reading such pages would map the zero page once per page, slow for a
/// `.bss` of gigabytes. (mincore would not do: it calls a swapped-out page absent.) Empty, so
/// every page is read, when pagemap cannot be read.
fn untouched_zero_pages(range: Range, page: usize) -> Vec<bool> {
    use std::os::unix::fs::FileExt;
    const PRESENT_OR_SWAPPED: u64 = 3 << 62;
    let Ok(pagemap) = std::fs::File::open("/proc/self/pagemap") else {
        return Vec::new();
    };
    let mut entries = vec![0u8; range.len / page * 8];
    if pagemap
        .read_exact_at(&mut entries, (range.start / page * 8) as u64)
        .is_err()
    {
        return Vec::new();
    }
    let first = range.zero_fill_at / page;
    entries
        .chunks_exact(8)
        .enumerate()
        .map(|(i, e)| {
            let entry = <[u8; 8]>::try_from(e).map_or(u64::MAX, u64::from_ne_bytes);
            i >= first && entry & PRESENT_OR_SWAPPED == 0
        })
        .collect()
}

/// Writes the pages of `live` that hold a non-zero byte into `fd` at their offsets; all-zero
/// pages stay holes (a large `.bss` costs no memory until used). `known_zero(i)` says page `i`
/// is zero without reading it.
fn copy_nonzero_pages(
    fd: &OwnedFd,
    live: &[u8],
    page: usize,
    known_zero: impl Fn(usize) -> bool,
) -> std::io::Result<()> {
    let has_data = |i: usize| {
        let at = i * page;
        !known_zero(i)
            && live[at..(at + page).min(live.len())]
                .iter()
                .any(|b| *b != 0)
    };
    let pages = live.len().div_ceil(page);
    let mut i = 0;
    while i < pages {
        if !has_data(i) {
            i += 1;
            continue;
        }
        let first = i;
        while i < pages && has_data(i) {
            i += 1;
        }
        let end = (i * page).min(live.len());
        let mut done = first * page;
        while done < end {
            match rustix::io::pwrite(fd, &live[done..end], done as u64)? {
                0 => return Err(std::io::ErrorKind::WriteZero.into()),
                n => done += n,
            }
        }
    }
    Ok(())
}

/// After a failed `MAP_FIXED` (which may have unmapped the range): puts private memory with the
/// saved bytes back at the same place. If even that fails the process cannot go on.
fn restore(range: Range, fd: &OwnedFd) {
    // SAFETY: the range is the executable's data segment, which we are putting back.
    let back = unsafe {
        rustix::mm::mmap_anonymous(
            range.start as *mut c_void,
            range.len,
            rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
            rustix::mm::MapFlags::PRIVATE | rustix::mm::MapFlags::FIXED,
        )
    };
    let restored = back.is_ok_and(|_| {
        // SAFETY: the range was just mapped private and writable; nothing else runs.
        let buf = unsafe { std::slice::from_raw_parts_mut(range.start as *mut u8, range.len) };
        let mut done = 0;
        while done < buf.len() {
            match rustix::io::pread(fd, &mut buf[done..], done as u64) {
                Ok(0) | Err(_) => return false,
                Ok(n) => done += n,
            }
        }
        true
    });
    if !restored {
        die(b"shmem: could not restore the program's global variables after a failed move\n");
    }
}

/// Writes `msg` to stderr and aborts; for the states no process can go on from.
fn die(msg: &[u8]) -> ! {
    // SAFETY: write(2) and abort are async-signal-safe and take plain buffers.
    unsafe {
        let _ = libc::write(2, msg.as_ptr() as *const c_void, msg.len());
        libc::abort()
    }
}

// The fork handlers. The copy must be taken before the fork: once fork returns, the parent
// runs on and writes its globals (Python releases locks there, for one), and a copy taken in
// the child afterwards would see those writes. So the prepare handler snapshots the range into
// private memory, which the child inherits and moves over the range, and the parent drops.
// glibc runs prepare, fork and the parent or child handlers under one lock when threads exist,
// so one snapshot slot is enough. Only async-signal-safe system calls; no allocation, lock or
// log. (Handlers do not run for vfork, posix_spawn or _Fork, whose children either share the
// parent's memory anyway or must not touch it.)

/// A private anonymous mapping of `len` bytes holding a copy of the range, or null.
///
/// # Safety
/// `start..start+len` must be the moved range and `fd` its memfd.
unsafe fn private_copy(fd: i32, start: usize, len: usize) -> *mut c_void {
    // SAFETY: a fresh private anonymous mapping at a kernel-chosen address overlaps nothing.
    let copy = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if copy == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    // SAFETY: `copy` is a fresh mapping of `len` bytes and the range is mapped readable (the
    // function's contract).
    unsafe { copy_data_extents(fd, start as *const u8, copy as *mut u8, len) };
    copy
}

/// Address of the snapshot the prepare handler took for the fork in progress (0 for none).
static SNAPSHOT: AtomicUsize = AtomicUsize::new(0);

/// `pthread_atfork` prepare handler: snapshots the range for the child.
unsafe extern "C" fn before_fork() {
    let len = CHILD_LEN.load(Ordering::Acquire);
    if len == 0 {
        return;
    }
    let (start, fd) = (
        CHILD_START.load(Ordering::Acquire),
        CHILD_FD.load(Ordering::Acquire),
    );
    // SAFETY: CHILD_* describe the moved range and its memfd once CHILD_LEN is set.
    let copy = unsafe { private_copy(fd, start, len) };
    SNAPSHOT.store(copy as usize, Ordering::Release);
}

/// `pthread_atfork` parent handler: drops the snapshot (the child has its own).
unsafe extern "C" fn after_fork_in_parent() {
    let copy = SNAPSHOT.swap(0, Ordering::AcqRel);
    if copy != 0 {
        // SAFETY: `copy` is the snapshot mapping of CHILD_LEN bytes made by before_fork, used by
        // nobody in this process.
        unsafe { libc::munmap(copy as *mut c_void, CHILD_LEN.load(Ordering::Acquire)) };
    }
}

/// `pthread_atfork` child handler: moves the snapshot over the shared range, so the child's
/// memory is what the parent had at the fork and its writes stay its own.
unsafe extern "C" fn after_fork_in_child() {
    let len = CHILD_LEN.swap(0, Ordering::AcqRel);
    if len == 0 {
        return;
    }
    FORKED.store(true, Ordering::Release);
    let start = CHILD_START.load(Ordering::Acquire);
    let mut copy = SNAPSHOT.swap(0, Ordering::AcqRel) as *mut c_void;
    if copy.is_null() {
        // The prepare handler found no memory; a late copy is still better than sharing.
        // SAFETY: as in before_fork.
        copy = unsafe { private_copy(CHILD_FD.load(Ordering::Acquire), start, len) };
    }
    if copy.is_null() {
        die(b"shmem: fork: no memory for the child's private copy of the global variables\n");
    }
    // SAFETY: moves the private copy over the shared range (same length and protection);
    // MREMAP_FIXED replaces the old mapping in one step, and only this thread exists here.
    let moved = unsafe {
        libc::mremap(
            copy,
            len,
            len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            start as *mut c_void,
        )
    };
    if moved == libc::MAP_FAILED {
        die(b"shmem: fork: could not give the child a private copy of the global variables\n");
    }
}

/// Copies the data extents of the memfd behind `src` (holes are zero pages the fresh `dst`
/// already has), or everything when the file system cannot say where data is.
///
/// # Safety
/// `src` and `dst` must be valid for `len` bytes, not overlapping; async-signal-safe.
unsafe fn copy_data_extents(fd: i32, src: *const u8, dst: *mut u8, len: usize) {
    let mut off: usize = 0;
    while off < len {
        // SAFETY: lseek has no memory preconditions; the shared file offset is never used.
        let data = unsafe { libc::lseek(fd, off as libc::off_t, libc::SEEK_DATA) };
        if data < 0 {
            // SAFETY: errno is thread-local and readable at any time.
            if unsafe { *libc::__errno_location() } == libc::ENXIO {
                return; // only holes from here on
            }
            // SAFETY: both ranges are valid for [off, len) (the function's contract).
            unsafe { std::ptr::copy_nonoverlapping(src.add(off), dst.add(off), len - off) };
            return;
        }
        let data = (data as usize).min(len);
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(fd, data as libc::off_t, libc::SEEK_HOLE) };
        let hole = if hole < 0 {
            len
        } else {
            (hole as usize).min(len)
        };
        // SAFETY: [data, hole) lies inside [0, len), valid for both pointers.
        unsafe { std::ptr::copy_nonoverlapping(src.add(data), dst.add(data), hole - data) };
        off = hole.max(data + 1);
    }
}

/// Global and static variables of the job as this PE sees them.
#[derive(Debug)]
pub struct StaticData {
    /// This process's symmetric static range: start (0 when the executable has none).
    pub base: usize,
    /// Its length in bytes.
    pub size: usize,
    /// Where every PE's range is mapped here, indexed by PE; empty when static data is not
    /// symmetric in this job.
    pub bases: Vec<usize>,
    /// Why static data is not symmetric ("" when it is).
    pub off_reason: String,
    /// The peers' ranges, unmapped on drop.
    _maps: Vec<device::Segment>,
}

/// Exchanges static-data files with every PE (collective, right after the heap exchange) and
/// maps theirs; decides for the whole job whether static targets are symmetric.
pub fn exchange(bootstrap: &Bootstrap, timeout: Duration) -> Result<StaticData> {
    let (my_pe, n_pes) = (bootstrap.rank(), bootstrap.size());
    let prepared = PREPARED.get();
    for note in prepared.iter().flat_map(|p| &p.notes) {
        tracing::debug!("static data: {note}");
    }
    let range = prepared.and_then(|p| p.range);
    let (base, size) = range.map_or((0, 0), |r| (r.start, r.len));
    let moved = match prepared.map(|p| &p.moved) {
        None => Err(NotMoved::from(NOT_PREPARED)),
        Some(Err(reason)) => Err(reason.clone()),
        Some(Ok(_)) if FORKED.load(Ordering::Acquire) => Err(NotMoved::from(FORKED_CHILD)),
        Some(Ok(fd)) => Ok(fd),
    };
    let mine = Announce {
        moved: moved.as_ref().map(|_| ()).map_err(NotMoved::clone),
        len: size,
        identity: prepared.map_or_else(|| "unknown executable".into(), |p| p.identity.clone()),
    };
    let all = (bootstrap.allgather(&mine.encode(), timeout))
        .map_err(|e| e.unshared("how it lays out global and static variables"))?
        .iter()
        .enumerate()
        .map(|(pe, bytes)| {
            Announce::decode(bytes).ok_or_else(|| Error::Mismatch {
                pe: pe as i32,
                what: "sent a static-data record this PE cannot read (a different libshmem \
                       version?)"
                    .into(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let off = |off_reason: String| StaticData {
        base,
        size,
        bases: Vec::new(),
        off_reason,
        _maps: Vec::new(),
    };
    match (verdict(&all, my_pe), moved) {
        (Err(Off::Different(reason)), _) => {
            if my_pe == 0 {
                tracing::warn!(
                    "{reason}; global and static variables are not symmetric in this job"
                );
            }
            Ok(off(reason))
        }
        (Err(Off::Skipped(reason)), _) => {
            tracing::debug!("global and static variables are not symmetric: {reason}");
            Ok(off(reason))
        }
        // The verdict is on only when this PE moved its data, so `moved` is Ok here.
        (Ok(()), Err(NotMoved(reason))) => Ok(off(reason)),
        (Ok(()), Ok(fd)) => {
            let mut bases = vec![0; n_pes];
            bases[my_pe] = base;
            let mut maps = Vec::new();
            {
                let exports = device::exchange(
                    bootstrap,
                    "data/",
                    Host.export_fd(fd)?,
                    "its global and static variables",
                    timeout,
                )?;
                // Other nodes' PEs keep base 0: only a transport reaches their static data.
                let node_peers = (exports.iter().enumerate())
                    .filter_map(|(pe, e)| e.as_ref().map(|e| (pe, e)))
                    .filter(|(pe, _)| *pe != my_pe);
                for (pe, theirs) in node_peers {
                    let len = Host.exported_len(theirs)?;
                    if len != size {
                        return Err(Error::Mismatch {
                            pe: pe as i32,
                            what: format!(
                                "its static-data file is {len} bytes, this PE's range {size}"
                            ),
                        });
                    }
                    let segment = Host.import(theirs, Placement::Anywhere)?;
                    bases[pe] = segment.addr();
                    maps.push(segment);
                }
            }
            tracing::debug!("global and static variables are symmetric: {size} bytes at {base:#x}");
            Ok(StaticData {
                base,
                size,
                bases,
                off_reason: String::new(),
                _maps: maps,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::Mapping;

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

    /// Offsets of the data extents of `fd` (SEEK_DATA/SEEK_HOLE), as (start, end) pairs.
    fn extents(fd: &OwnedFd, len: usize) -> Vec<(usize, usize)> {
        use rustix::fs::{seek, SeekFrom};
        let mut out = Vec::new();
        let mut off = 0u64;
        while (off as usize) < len {
            let Ok(data) = seek(fd, SeekFrom::Data(off)) else {
                break;
            };
            let hole = seek(fd, SeekFrom::Hole(data)).unwrap();
            out.push((data as usize, hole as usize));
            off = hole;
        }
        out
    }

    #[test]
    fn copy_writes_only_pages_with_data_and_the_child_copy_reads_them_back() {
        let pages = 8;
        let mut live = vec![0u8; pages * PAGE];
        live[PAGE + 5] = 1; // page 1
        live[2 * PAGE] = 2; // page 2
        live[5 * PAGE + PAGE - 1] = 3; // page 5, said to be known zero: skipped
        live[7 * PAGE] = 4; // page 7
        let fd = mapping::memfd("test", live.len()).unwrap();
        copy_nonzero_pages(&fd, &live, PAGE, |i| i == 5).unwrap();
        assert_eq!(
            extents(&fd, live.len()),
            vec![(PAGE, 3 * PAGE), (7 * PAGE, 8 * PAGE)]
        );
        let map = Mapping::map_shared(&fd, live.len()).unwrap();
        let mut copy = vec![0u8; live.len()];
        // SAFETY: both buffers are valid for live.len() bytes and distinct.
        unsafe {
            copy_data_extents(
                fd.as_raw_fd(),
                map.addr() as *const u8,
                copy.as_mut_ptr(),
                live.len(),
            )
        };
        live[5 * PAGE + PAGE - 1] = 0;
        assert!(copy == live);
    }

    #[test]
    fn untouched_pages_of_the_zero_fill_part_are_known_zero() {
        let len = 8 * PAGE;
        // SAFETY: a fresh private anonymous mapping overlaps nothing; unmapped below.
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE,
            )
        }
        .unwrap();
        // SAFETY: pages 2 and 5 lie inside the mapping made above.
        unsafe {
            std::ptr::write_volatile((p as *mut u8).add(2 * PAGE), 1);
            std::ptr::write_volatile((p as *mut u8).add(5 * PAGE + 9), 1);
        }
        let all = untouched_zero_pages(range(p as usize, len, 0), PAGE);
        let want = [true, true, false, true, true, false, true, true];
        assert_eq!(all, want);
        let tail = untouched_zero_pages(range(p as usize, len, 4 * PAGE), PAGE);
        assert_eq!(tail, [false, false, false, false, true, false, true, true]);
        // SAFETY: unmaps the mapping made above, no longer used.
        unsafe { rustix::mm::munmap(p, len) }.unwrap();
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

    fn announce(moved: std::result::Result<(), &str>, len: usize, id: &str) -> Announce {
        Announce {
            moved: moved.map_err(NotMoved::from),
            len,
            identity: id.into(),
        }
    }

    #[test]
    fn announce_round_trips() {
        for a in [
            announce(Ok(()), 4096, "build-id ab"),
            announce(
                Err("a reason\nwith lines"),
                0,
                "no build-id, executable /x\ny",
            ),
        ] {
            let back = Announce::decode(&a.encode()).unwrap();
            assert_eq!(back.moved, a.moved);
            assert_eq!(back.len, a.len);
        }
        assert_eq!(Announce::decode(b"moved\nlots\nid"), None);
        assert_eq!(Announce::decode(b"maybe\n1\nid"), None);
    }

    #[test]
    fn verdict_is_on_when_every_pe_moved_the_same_executable() {
        let all = vec![announce(Ok(()), 8192, "build-id ab"); 4];
        for pe in 0..4 {
            assert_eq!(verdict(&all, pe), Ok(()));
        }
    }

    #[test]
    fn verdict_is_off_everywhere_when_one_pe_skipped() {
        let mut all = vec![announce(Ok(()), 8192, "build-id ab"); 4];
        all[2] = announce(Err(OFF_BY_ENV), 8192, "build-id ab");
        for pe in [0, 1, 3] {
            assert_eq!(
                verdict(&all, pe),
                Err(Off::Skipped(format!("on PE 2, {OFF_BY_ENV}")))
            );
        }
        assert_eq!(verdict(&all, 2), Err(Off::Skipped(OFF_BY_ENV.into())));
    }

    #[test]
    fn verdict_is_off_everywhere_for_different_executables() {
        let mut all = vec![announce(Ok(()), 8192, "build-id ab"); 4];
        all[3] = announce(Ok(()), 8192, "build-id cd");
        let Err(Off::Different(msg)) = verdict(&all, 0) else {
            panic!("not off")
        };
        assert_eq!(
            msg,
            "PEs run different executables: PE 3 has build-id cd, this PE build-id ab"
        );
        let Err(Off::Different(msg)) = verdict(&all, 3) else {
            panic!("not off")
        };
        assert!(
            msg.contains("PE 0 has build-id ab, this PE build-id cd"),
            "{msg}"
        );
        for pe in [1, 2] {
            assert!(matches!(verdict(&all, pe), Err(Off::Different(_))));
        }
        all[3] = announce(Ok(()), 4096, "build-id ab");
        assert!(matches!(verdict(&all, 1), Err(Off::Different(m)) if m.contains("4096 bytes")));
    }
}
