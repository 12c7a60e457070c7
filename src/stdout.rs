//! What the binaries print for people on standard output, through `say!` (a line) and
//! `say_text!` (text as it is). A closed standard output (`cdnlab status LAB | head -1`) is not
//! an error: the rest of the output is dropped and the command finishes as it would have, with
//! its own exit status, instead of panicking with "Broken pipe" as `println!` does. Other write
//! errors (a full disk under a redirect) are reported once on standard error.

use std::fmt;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Writes `text` to standard output and flushes it.
pub fn write(text: fmt::Arguments) {
    static REPORTED: AtomicBool = AtomicBool::new(false);
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(text).and_then(|()| out.flush());
    if let Err(e) = written {
        if e.kind() != ErrorKind::BrokenPipe && !REPORTED.swap(true, Ordering::Relaxed) {
            eprintln!("standard output: {e}");
        }
    }
}

/// `println!` that a closed standard output does not stop (see the module doc).
#[macro_export]
macro_rules! say {
    () => {
        $crate::stdout::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::stdout::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` that a closed standard output does not stop (see the module doc).
#[macro_export]
macro_rules! say_text {
    ($($arg:tt)*) => {
        $crate::stdout::write(format_args!($($arg)*))
    };
}
