//! The conformance runner (tests/conformance/runner), linked into a Rust binary.
#[cfg(mq_runner)]
fn main() {
    use std::ffi::{c_char, c_int, CString};
    extern "C" {
        fn mq_conformance_main(argc: c_int, argv: *mut *mut c_char) -> c_int;
    }
    let args: Vec<CString> = std::env::args_os()
        .map(|a| CString::new(a.into_encoded_bytes()).expect("no NUL in arguments"))
        .collect();
    let mut argv: Vec<*mut c_char> = args.iter().map(|a| a.as_ptr() as *mut c_char).collect();
    argv.push(std::ptr::null_mut());
    // SAFETY: argv is a NULL-terminated array of NUL-terminated strings that outlive the call.
    let rc = unsafe { mq_conformance_main(args.len() as c_int, argv.as_mut_ptr()) };
    std::process::exit(rc);
}

#[cfg(not(mq_runner))]
fn main() {
    eprintln!("mq-conformance-runner: built without the conformance runner's sources (tests/conformance/runner)");
    std::process::exit(2);
}
