//! `shmemrun` is built on the control store (`shmem-store`) and the shared base (`shmem-base`)
//! alone: never on the runtime, its C++ bridge or the device drivers, which a launcher has no
//! use for and which would make it larger and slower to build.

use std::process::Command;

/// Packages `shmemrun` must not depend on, directly or through another crate.
const NEVER: &[&str] = &["shmem-core", "cxx", "ascend-sys", "cuda-sys"];

#[test]
fn shmemrun_links_neither_the_runtime_nor_a_device_driver() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
    let out = Command::new(&cargo)
        .args(["tree", "--manifest-path", manifest, "-p", "shmemrun"])
        .args([
            "--edges",
            "normal,build",
            "--prefix",
            "none",
            "--locked",
            "--offline",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{cargo} tree: {e}"));
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{cargo} tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let packages: Vec<&str> = tree.lines().filter_map(|l| l.split(' ').next()).collect();
    assert!(
        packages.contains(&"shmem-store") && packages.contains(&"shmem-base"),
        "shmemrun's dependencies as cargo tree lists them:\n{tree}"
    );
    let found: Vec<&&str> = NEVER.iter().filter(|p| packages.contains(p)).collect();
    assert!(found.is_empty(), "shmemrun depends on {found:?}:\n{tree}");
}
