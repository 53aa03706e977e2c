//! Runs the C demo (examples/demo.c), linked into this binary.
extern "C" {
    fn mq_c_demo_main() -> std::ffi::c_int;
}

fn main() {
    // Make sure the C library (mq-sys) is linked in.
    let _ = mq_sys::mq_version_number as unsafe extern "C" fn() -> i32;
    // SAFETY: the C demo's main takes no arguments and may be called once.
    std::process::exit(unsafe { mq_c_demo_main() });
}
