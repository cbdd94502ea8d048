//! The fuzz targets' inputs, replayed as tests: the corpus a target grew
//! (`fuzz/corpus/<target>/`) and every input that once broke it
//! (`fuzz/regressions/<target>/`), both committed, so that a bug the
//! fuzzer found stays fixed on the stable toolchain, without the fuzzer.

use std::path::{Path, PathBuf};

/// The repository's `fuzz/` directory.
fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Every committed input of `target`: (its file, its bytes). Panics when
/// there is none, so that a replay test cannot pass by reading nothing.
pub fn fuzz_inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut inputs = Vec::new();
    for kind in ["corpus", "regressions"] {
        let dir = fuzz_dir().join(kind).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.is_file())
            .collect();
        files.sort();
        for file in files {
            match std::fs::read(&file) {
                Ok(bytes) => inputs.push((file, bytes)),
                Err(error) => panic!("cannot read {}: {error}", file.display()),
            }
        }
    }
    assert!(
        !inputs.is_empty(),
        "no committed input for the fuzz target `{target}` under {}",
        fuzz_dir().display()
    );
    inputs
}

/// Runs `harness` on every committed input of `target`, naming the input
/// that made it panic.
pub fn replay(target: &str, harness: impl Fn(&[u8]) + std::panic::RefUnwindSafe) {
    for (file, bytes) in fuzz_inputs(target) {
        let outcome = std::panic::catch_unwind(|| harness(&bytes));
        assert!(
            outcome.is_ok(),
            "the fuzz target `{target}` fails on {}",
            file.display()
        );
    }
}
