//! The crate against the built library: every declared symbol is exported by `libshmem.so`
//! (the one in `SHMEM_LIB_DIR`), and the CANN structs have CANN's sizes and offsets (the
//! numbers `tests/abi/layout.c` checks the C header against).

use shmem_sys::*;
use std::mem::{size_of, MaybeUninit};
use std::path::PathBuf;
use std::process::Command;

/// The defined dynamic symbols of the library `SHMEM_LIB_DIR` names, from `nm -D`.
fn exported() -> Vec<String> {
    let dir = std::env::var("SHMEM_LIB_DIR")
        .expect("SHMEM_LIB_DIR names the directory of the libshmem.so under test");
    let lib = PathBuf::from(dir).join("libshmem.so");
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("nm runs");
    assert!(out.status.success(), "nm -D {}: {:?}", lib.display(), out);
    String::from_utf8(out.stdout)
        .expect("nm prints text")
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .map(|s| s.split('@').next().unwrap_or(s).to_string())
        .collect()
}

#[test]
fn every_declared_symbol_is_exported() {
    let exported = exported();
    let declared = declared_symbols();
    assert!(
        declared.len() > 400,
        "only {} symbols declared",
        declared.len()
    );
    let missing: Vec<&str> = declared
        .iter()
        .copied()
        .filter(|s| !exported.iter().any(|e| e == s))
        .collect();
    assert!(missing.is_empty(), "declared but not exported: {missing:?}");
}

#[test]
fn declared_symbols_are_unique() {
    let mut all = declared_symbols();
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n);
}

/// Byte offset of a field, from a pointer to it inside an uninitialised value.
macro_rules! offset {
    ($t:ty, $field:ident) => {{
        let v = MaybeUninit::<$t>::uninit();
        let base = v.as_ptr();
        // SAFETY: only the field's address is computed, inside the value; nothing is read.
        let field = unsafe { std::ptr::addr_of!((*base).$field) };
        field as usize - base as usize
    }};
}

#[test]
fn cann_structs_have_canns_layout() {
    assert_eq!(size_of::<aclshmem_init_optional_attr_t>(), 24);
    assert_eq!(offset!(aclshmem_init_optional_attr_t, version), 0);
    assert_eq!(
        offset!(aclshmem_init_optional_attr_t, data_op_engine_type),
        4
    );
    assert_eq!(offset!(aclshmem_init_optional_attr_t, shm_init_timeout), 8);
    assert_eq!(
        offset!(aclshmem_init_optional_attr_t, shm_create_timeout),
        12
    );
    assert_eq!(
        offset!(aclshmem_init_optional_attr_t, control_operation_timeout),
        16
    );
    assert_eq!(offset!(aclshmem_init_optional_attr_t, sockFd), 20);
    assert_eq!(size_of::<data_op_engine_type_t>(), 4);

    assert_eq!(size_of::<aclshmemx_init_attr_t>(), 120);
    assert_eq!(offset!(aclshmemx_init_attr_t, my_pe), 0);
    assert_eq!(offset!(aclshmemx_init_attr_t, n_pes), 4);
    assert_eq!(offset!(aclshmemx_init_attr_t, ip_port), 8);
    assert_eq!(offset!(aclshmemx_init_attr_t, local_mem_size), 72);
    assert_eq!(offset!(aclshmemx_init_attr_t, option_attr), 80);
    assert_eq!(offset!(aclshmemx_init_attr_t, comm_args), 104);
    assert_eq!(offset!(aclshmemx_init_attr_t, instance_id), 112);

    assert_eq!(size_of::<aclshmemx_uniqueid_t>(), 136);
    assert_eq!(offset!(aclshmemx_uniqueid_t, version), 0);
    assert_eq!(offset!(aclshmemx_uniqueid_t, my_pe), 4);
    assert_eq!(offset!(aclshmemx_uniqueid_t, n_pes), 8);
    assert_eq!(offset!(aclshmemx_uniqueid_t, internal), 12);
    assert_eq!(size_of::<shmemx_uniqueid_t>(), 128);
    assert_eq!(offset!(shmemx_uniqueid_t, internal), 4);

    assert_eq!(size_of::<shmem_team_config_t>(), 4);
}

#[test]
fn versions_and_codes_are_canns() {
    assert_eq!(ACLSHMEM_UNIQUEID_VERSION, 65536 + 136);
    assert_eq!(SHMEM_UNIQUEID_VERSION, 65536 + 128);
    assert_eq!(ACLSHMEM_OPTIONAL_ATTR_VERSION, 65536 + 24);
    assert_eq!(
        [
            ACLSHMEM_INVALID_PARAM,
            ACLSHMEM_NOT_INITED,
            ACLSHMEM_NOT_SUPPORTED
        ],
        [-1, -5, -100]
    );
    assert_eq!(
        [ACLSHMEMX_INIT_WITH_DEFAULT, ACLSHMEMX_INIT_WITH_UNIQUEID],
        [1, 8]
    );
    let attr = aclshmemx_init_attr_t::default();
    assert_eq!(attr.option_attr.shm_init_timeout, 120);
    assert!(attr.comm_args.is_null());
}

#[test]
fn predefined_handles_are_the_librarys_objects() {
    // Only addresses are taken: nothing needs the library initialised.
    assert!(!shmem_team_world().is_null());
    assert!(!shmem_team_shared().is_null());
    assert_ne!(shmem_team_world(), shmem_team_shared());
    assert!(!shmem_ctx_default().is_null());
    assert!(SHMEM_TEAM_INVALID.is_null());
}
