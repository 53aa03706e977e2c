//! Names (topics, groups, member ids) as the C API takes them: NUL-terminated, copied into a
//! stack buffer so a call by name allocates nothing.
use std::ffi::{c_char, CString};

use crate::error::{Error, Result};

/// Longer than any legal name (249), so every legal name fits and the library reports the
/// illegal ones in its own words.
const STACK: usize = 256;

/// Calls `f` with `name` as a NUL-terminated C string.
#[inline]
pub(crate) fn with_name<R>(name: &str, f: impl FnOnce(*const c_char) -> Result<R>) -> Result<R> {
    let bytes = name.as_bytes();
    if bytes.contains(&0) {
        return Err(Error::Invalid(format!(
            "the name {name:?} contains a NUL byte (names are 1 to 249 characters of [a-zA-Z0-9._-])"
        )));
    }
    if bytes.len() < STACK {
        let mut buf = [0u8; STACK];
        buf[..bytes.len()].copy_from_slice(bytes);
        f(buf.as_ptr().cast())
    } else {
        let c = CString::new(bytes).expect("checked for NUL above");
        f(c.as_ptr())
    }
}

/// An owned C copy of a name, for handles that call by name again and again.
pub(crate) fn owned(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| {
        Error::Invalid(format!(
            "the name {name:?} contains a NUL byte (names are 1 to 249 characters of [a-zA-Z0-9._-])"
        ))
    })
}
