//! The clock shim (`clock_shim.c`) built with `cc`, for a redis-server
//! to preload: its wall clock runs ahead of the real one by an offset the
//! test steps by writing a file.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct ClockShim {
    library: PathBuf,
    offset: PathBuf,
}

impl ClockShim {
    /// Builds the shim into `dir`, its offset 0.
    pub fn build(dir: &Path) -> ClockShim {
        std::fs::create_dir_all(dir).expect("a directory for the clock shim");
        let source = dir.join("clock_shim.c");
        std::fs::write(&source, include_str!("clock_shim.c")).expect("the shim's source");
        let library = dir.join("clock_shim.so");
        let built = Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&library)
            .arg(&source)
            .arg("-ldl")
            .status()
            .expect("cc runs (the clock shim is C)");
        assert!(built.success(), "the clock shim did not build");
        let offset = dir.join("offset");
        std::fs::write(&offset, 0i64.to_le_bytes()).expect("the offset file");
        ClockShim { library, offset }
    }

    /// The environment a process preloads it with.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), self.library.display().to_string()),
            (
                "SIDEJOB_CLOCK_OFFSET".into(),
                self.offset.display().to_string(),
            ),
        ]
    }

    /// Steps the shimmed clock to `offset_ms` ahead of the real one.
    pub fn step(&self, offset_ms: i64) {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&self.offset)
            .expect("the offset file");
        // In place, never truncated: the processes map the file.
        file.write_all_at(&offset_ms.to_le_bytes(), 0)
            .expect("the offset is written");
    }
}
