//! Gives the extension module a run-time search path to the directory of the libshmem.so it
//! is meant to load (`SHMEM_PYTHON_RPATH`, else the one it links against), so that
//! `import shmem` needs no `LD_LIBRARY_PATH`: the wheel holds no copy of the library, and the
//! process loads the one installed beside shmemrun and the C headers.

fn main() {
    println!("cargo:rerun-if-env-changed=SHMEM_PYTHON_RPATH");
    let dir = std::env::var("SHMEM_PYTHON_RPATH")
        .ok()
        .filter(|d| !d.is_empty())
        .or_else(|| std::env::var("DEP_SHMEM_LIB_DIR").ok());
    if let Some(dir) = dir {
        for d in dir.split(':').filter(|d| !d.is_empty()) {
            println!("cargo:rustc-link-arg-cdylib=-Wl,-rpath,{d}");
        }
    }
}
