//! Generates the C++ half of the cxx bridge; CMake owns every other C++ file.
fn main() {
    cxx_build::bridge("src/ffi.rs")
        .std("c++17")
        .flag_if_supported("-fvisibility=hidden")
        .compile("shmem-core-bridge");
    println!("cargo:rerun-if-changed=src/ffi.rs");
}
