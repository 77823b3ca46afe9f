//! Loading fails cleanly: a library that is not there, or one without the driver's symbols,
//! gives an error that names it, never a panic or a partly filled table.

use cuda_sys::Cuda;

#[test]
fn a_missing_library_is_an_error() {
    let name = "libcuda-not-installed-here.so.1";
    let err = Cuda::load(name).expect_err("loading a library that does not exist");
    assert!(
        err.to_string().contains(name),
        "the error names the file: {err}"
    );
}

#[test]
fn a_library_without_the_driver_is_an_error() {
    // The C library is loaded in every test process and defines none of the driver's symbols:
    // the first one resolved, cuInit, is the one the error names.
    let err = Cuda::load("libc.so.6").expect_err("libc has no cuInit");
    assert!(
        err.to_string().contains("cuInit"),
        "the error names the symbol: {err}"
    );
}
