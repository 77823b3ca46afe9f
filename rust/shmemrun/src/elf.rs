//! Reads which shared libraries an ELF executable names as needed (its `DT_NEEDED` entries).
//!
//! A reader of exactly that much, for the launcher's check of what a program is linked with
//! (a general object-file crate would add a dependency to read one table): the file header,
//! the program headers, the dynamic segment and the strings it points to, found the way the
//! dynamic loader finds them (program headers, not section headers, which a stripped file may
//! lack). Both classes (32 and 64 bits) and both byte orders. It reads only
//! those parts of the file, each with a bounded size, and never trusts an offset or a count
//! from the file without checking it against what was read.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// How a file is linked, as far as the launcher cares.
#[derive(Debug, PartialEq, Eq)]
pub enum Linking {
    /// Not an ELF file (a `#!` script, for instance).
    NotElf,
    /// An ELF file without a dynamic segment: linked statically.
    Static,
    /// A dynamically linked ELF file and the libraries it names as needed, in file order.
    Dynamic(Vec<String>),
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_STRTAB: u64 = 5;
const DT_STRSZ: u64 = 10;

/// Most program headers read; real files have about a dozen.
const MAX_PROGRAM_HEADERS: usize = 4096;
/// Largest program header accepted; real ones are 32 or 56 bytes.
const MAX_PROGRAM_HEADER_SIZE: usize = 256;
/// Most bytes of dynamic segment read; real ones are a few hundred bytes.
const MAX_DYNAMIC_BYTES: u64 = 1 << 20;
/// Longest library name read.
const MAX_NAME: u64 = 4096;

/// Reads how the file at `path` is linked; anything but a regular file is [`Linking::NotElf`].
pub fn linking(path: &Path) -> io::Result<Linking> {
    // Non-blocking, so that opening a FIFO given as the program cannot wait for a writer.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Ok(Linking::NotElf);
    }
    read(&file)
}

/// Byte order and word size of one file, and reads of its fields.
#[derive(Clone, Copy)]
struct Layout {
    wide: bool,
    big_endian: bool,
}

fn malformed(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("malformed ELF file: {what}"),
    )
}

impl Layout {
    fn bytes<const N: usize>(self, buf: &[u8], at: usize) -> io::Result<[u8; N]> {
        buf.get(at..at + N)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| malformed("a field lies past what was read"))
    }

    fn u16(self, buf: &[u8], at: usize) -> io::Result<u16> {
        let b = self.bytes::<2>(buf, at)?;
        Ok(if self.big_endian {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        })
    }

    fn u32(self, buf: &[u8], at: usize) -> io::Result<u32> {
        let b = self.bytes::<4>(buf, at)?;
        Ok(if self.big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }

    /// An address, offset or size: 4 bytes in a 32-bit file, 8 in a 64-bit one.
    fn word(self, buf: &[u8], at: usize) -> io::Result<u64> {
        if !self.wide {
            return self.u32(buf, at).map(u64::from);
        }
        let b = self.bytes::<8>(buf, at)?;
        Ok(if self.big_endian {
            u64::from_be_bytes(b)
        } else {
            u64::from_le_bytes(b)
        })
    }

    fn word_size(self) -> usize {
        if self.wide {
            8
        } else {
            4
        }
    }
}

/// One program header, the fields used.
struct Segment {
    kind: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
}

/// Reads `len` bytes at `offset`, or fewer at the end of the file.
fn read_at(file: &File, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    let len = usize::try_from(len).map_err(|_| malformed("a size does not fit in memory"))?;
    let mut buf = vec![0; len];
    let mut filled = 0;
    while filled < len {
        let at = offset
            .checked_add(filled as u64)
            .ok_or_else(|| malformed("an offset overflows"))?;
        match file.read_at(&mut buf[filled..], at) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

fn read(file: &File) -> io::Result<Linking> {
    let header = read_at(file, 0, 64)?;
    if header.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Ok(Linking::NotElf);
    }
    let layout = Layout {
        wide: match header.get(4) {
            Some(1) => false,
            Some(2) => true,
            _ => return Err(malformed("unknown class")),
        },
        big_endian: match header.get(5) {
            Some(1) => false,
            Some(2) => true,
            _ => return Err(malformed("unknown byte order")),
        },
    };
    let (phoff, phentsize, phnum) = if layout.wide {
        (
            layout.word(&header, 0x20)?,
            layout.u16(&header, 0x36)?,
            layout.u16(&header, 0x38)?,
        )
    } else {
        (
            layout.word(&header, 0x1c)?,
            layout.u16(&header, 0x2a)?,
            layout.u16(&header, 0x2c)?,
        )
    };
    let (phentsize, phnum) = (usize::from(phentsize), usize::from(phnum));
    // 0xffff means the count is kept elsewhere (in section 0); no executable needs that many.
    if phnum > MAX_PROGRAM_HEADERS {
        return Err(malformed("too many program headers"));
    }
    let entry_size = if layout.wide { 56 } else { 32 };
    if phnum > 0 && !(entry_size..=MAX_PROGRAM_HEADER_SIZE).contains(&phentsize) {
        return Err(malformed("program header size out of range"));
    }
    let table = read_at(file, phoff, (phentsize * phnum) as u64)?;
    let mut segments = Vec::with_capacity(phnum);
    for i in 0..phnum {
        let at = i * phentsize;
        let w = layout.word_size();
        // 64-bit: type, flags, offset, vaddr, paddr, filesz; 32-bit: type, offset, vaddr,
        // paddr, filesz, memsz, flags.
        let first = if layout.wide { 8 } else { 4 };
        segments.push(Segment {
            kind: layout.u32(&table, at)?,
            offset: layout.word(&table, at + first)?,
            vaddr: layout.word(&table, at + first + w)?,
            filesz: layout.word(&table, at + first + 3 * w)?,
        });
    }

    let Some(dynamic) = segments.iter().find(|s| s.kind == PT_DYNAMIC) else {
        return Ok(Linking::Static);
    };
    let dynamic = read_at(file, dynamic.offset, dynamic.filesz.min(MAX_DYNAMIC_BYTES))?;
    let entry = 2 * layout.word_size();
    let (mut needed, mut strtab, mut strsz) = (Vec::new(), None, None);
    for at in (0..dynamic.len() / entry).map(|i| i * entry) {
        let tag = layout.word(&dynamic, at)?;
        let value = layout.word(&dynamic, at + layout.word_size())?;
        match tag {
            DT_NULL => break,
            DT_NEEDED => needed.push(value),
            DT_STRTAB => strtab = Some(value),
            DT_STRSZ => strsz = Some(value),
            _ => {}
        }
    }
    if needed.is_empty() {
        return Ok(Linking::Dynamic(Vec::new()));
    }
    let (Some(strtab), Some(strsz)) = (strtab, strsz) else {
        return Err(malformed("needed libraries without a string table"));
    };
    // The string table is given as an address: find the loaded segment holding it.
    let strtab_offset = segments
        .iter()
        .filter(|s| s.kind == PT_LOAD)
        .find(|s| strtab >= s.vaddr && strtab - s.vaddr < s.filesz)
        .and_then(|s| s.offset.checked_add(strtab - s.vaddr))
        .ok_or_else(|| malformed("string table outside the loaded segments"))?;

    let mut names = Vec::with_capacity(needed.len());
    for index in needed {
        if index >= strsz {
            return Err(malformed("library name outside the string table"));
        }
        let offset = strtab_offset
            .checked_add(index)
            .ok_or_else(|| malformed("library name offset overflows"))?;
        let bytes = read_at(file, offset, (strsz - index).min(MAX_NAME))?;
        let end = bytes
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| malformed("library name without an end"))?;
        names.push(String::from_utf8_lossy(&bytes[..end]).into_owned());
    }
    Ok(Linking::Dynamic(names))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Writes `bytes` to a fresh file and reads how it is linked.
    fn linking_of(name: &str, bytes: &[u8]) -> io::Result<Linking> {
        let path = std::env::temp_dir().join(format!("shmemrun-elf-{}-{name}", std::process::id()));
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(bytes))
            .unwrap();
        let result = linking(&path);
        std::fs::remove_file(&path).unwrap();
        result
    }

    /// A minimal ELF file: header, one PT_LOAD covering the file, optionally a PT_DYNAMIC with
    /// the given needed names.
    fn synthetic(wide: bool, big_endian: bool, needed: Option<&[&str]>) -> Vec<u8> {
        let put = |buf: &mut Vec<u8>, at: usize, value: u64, size: usize| {
            let bytes = if big_endian {
                value.to_be_bytes()[8 - size..].to_vec()
            } else {
                value.to_le_bytes()[..size].to_vec()
            };
            if buf.len() < at + size {
                buf.resize(at + size, 0);
            }
            buf[at..at + size].copy_from_slice(&bytes);
        };
        let w = if wide { 8 } else { 4 };
        let (ehsize, phentsize) = if wide { (64, 56) } else { (52, 32) };
        let phnum = if needed.is_some() { 2 } else { 1 };
        let mut f = vec![0u8; ehsize];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = if wide { 2 } else { 1 };
        f[5] = if big_endian { 2 } else { 1 };
        f[6] = 1;
        let (phoff_at, phentsize_at, phnum_at) = if wide {
            (0x20, 0x36, 0x38)
        } else {
            (0x1c, 0x2a, 0x2c)
        };
        put(&mut f, phoff_at, ehsize as u64, w);
        put(&mut f, phentsize_at, phentsize as u64, 2);
        put(&mut f, phnum_at, phnum as u64, 2);
        let strings_at = ehsize + phnum * phentsize;
        let mut strings = vec![0u8];
        let mut indices = Vec::new();
        for name in needed.unwrap_or(&[]) {
            indices.push(strings.len() as u64);
            strings.extend_from_slice(name.as_bytes());
            strings.push(0);
        }
        let dynamic_at = strings_at + strings.len();
        let mut dynamic = Vec::new();
        let mut entry = |tag: u64, value: u64| {
            let at = dynamic.len();
            put(&mut dynamic, at, tag, w);
            put(&mut dynamic, at + w, value, w);
        };
        for i in &indices {
            entry(DT_NEEDED, *i);
        }
        entry(DT_STRTAB, 0x1000 + strings_at as u64);
        entry(DT_STRSZ, strings.len() as u64);
        entry(DT_NULL, 0);
        let total = dynamic_at + dynamic.len();
        // Program headers: PT_LOAD of the whole file at 0x1000, then PT_DYNAMIC.
        let first = if wide { 8 } else { 4 };
        let mut header = |index: usize, kind: u32, offset: usize, size: usize| {
            let at = ehsize + index * phentsize;
            put(&mut f, at, u64::from(kind), 4);
            put(&mut f, at + first, offset as u64, w);
            put(&mut f, at + first + w, 0x1000 + offset as u64, w);
            put(&mut f, at + first + 3 * w, size as u64, w);
            put(&mut f, at + first + 4 * w, size as u64, w);
        };
        header(0, PT_LOAD, 0, total);
        if needed.is_some() {
            header(1, PT_DYNAMIC, dynamic_at, dynamic.len());
        }
        f.resize(strings_at, 0);
        f.extend_from_slice(&strings);
        f.extend_from_slice(&dynamic);
        f
    }

    #[test]
    fn needed_libraries_in_every_class_and_byte_order() {
        let names = ["liboshmem.so.40", "libc.so.6"];
        for wide in [false, true] {
            for big_endian in [false, true] {
                let file = synthetic(wide, big_endian, Some(&names));
                assert_eq!(
                    linking_of("dyn", &file).unwrap(),
                    Linking::Dynamic(names.iter().map(|s| s.to_string()).collect()),
                    "wide {wide}, big endian {big_endian}"
                );
            }
        }
    }

    #[test]
    fn static_files_and_scripts_are_told_apart() {
        assert_eq!(
            linking_of("static", &synthetic(true, false, None)).unwrap(),
            Linking::Static
        );
        assert_eq!(
            linking_of("script", b"#!/bin/sh\necho hi\n").unwrap(),
            Linking::NotElf
        );
        assert_eq!(linking_of("empty", b"").unwrap(), Linking::NotElf);
    }

    #[test]
    fn a_fifo_is_not_waited_on() {
        let path = std::env::temp_dir().join(format!("shmemrun-elf-{}-fifo", std::process::id()));
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        // Without a writer, a blocking open would never return.
        let result = linking(&path);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(result.unwrap(), Linking::NotElf);
        assert_eq!(linking(Path::new("/")).unwrap(), Linking::NotElf);
    }

    #[test]
    fn a_real_executable_needs_libc() {
        let Linking::Dynamic(names) = linking(&std::env::current_exe().unwrap()).unwrap() else {
            panic!("this test binary is dynamically linked");
        };
        assert!(names.iter().any(|n| n.starts_with("libc.so")), "{names:?}");
    }

    #[test]
    fn truncated_or_corrupt_files_are_errors_not_panics() {
        let good = synthetic(true, false, Some(&["libx.so.1"]));
        for len in 0..good.len() {
            // Any answer is fine; it must not panic or read without bound.
            let _ = linking_of("cut", &good[..len]);
        }
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0xff;
            let _ = linking_of("flip", &bad);
        }
        let mut huge = good.clone();
        huge[0x38] = 0xff;
        huge[0x39] = 0xff;
        assert!(linking_of("phnum", &huge).is_err());
    }
}
