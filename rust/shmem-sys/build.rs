//! Links the shared library `libshmem.so`, never a copy of the runtime: the directory comes
//! from `SHMEM_LIB_DIR`, else from pkg-config's `shmem` package, else the linker's own search
//! path. With `SHMEM_LIB_DIR`, this package's own tests and examples also get it as their
//! run-time search path; dependent crates read it as `DEP_SHMEM_LIB_DIR`.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=SHMEM_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let dir = std::env::var("SHMEM_LIB_DIR")
        .ok()
        .filter(|d| !d.is_empty())
        .or_else(pkg_config_libdir);
    if let Some(dir) = dir {
        println!("cargo:rustc-link-search=native={dir}");
        println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{dir}");
        println!("cargo:rustc-link-arg-examples=-Wl,-rpath,{dir}");
        println!("cargo:lib_dir={dir}");
    }
    println!("cargo:rustc-link-lib=dylib=shmem");
}

/// `pkg-config --variable=libdir shmem`, when pkg-config and the package are there.
fn pkg_config_libdir() -> Option<String> {
    let out = Command::new("pkg-config")
        .args(["--variable=libdir", "shmem"])
        .output()
        .ok()?;
    let dir = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !dir.is_empty()).then_some(dir)
}
