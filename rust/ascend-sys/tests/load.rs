//! Loading fails cleanly: a library that is not there, or one without ACL's symbols, gives an
//! error that names it, never a panic or a partly filled table.

use ascend_sys::Acl;

#[test]
fn a_missing_library_is_an_error() {
    let name = "libascendcl-not-installed-here.so";
    let err = Acl::load(name).expect_err("loading a library that does not exist");
    assert!(
        err.to_string().contains(name),
        "the error names the file: {err}"
    );
}

#[test]
fn a_library_without_acl_is_an_error() {
    // The C library is loaded in every test process and defines none of ACL's symbols: the
    // first one resolved, aclInit, is the one the error names.
    let err = Acl::load("libc.so.6").expect_err("libc has no aclInit");
    assert!(
        err.to_string().contains("aclInit"),
        "the error names the symbol: {err}"
    );
}
