//! Optimized builds (the `release` and `dist` profiles, which cargo both
//! reports as `release`) lay out the binary's code so that what serving a
//! tool call runs sits together: `link/hot-symbols.txt` (written by
//! `scripts/hot-symbols`) lists those functions, and lld places them first.
//! Scattered, the hot code pulls most of the text into memory a page cluster
//! at a time; together, it costs a few megabytes less of idle RSS. Names the
//! current build no longer has are skipped, so a stale list only weakens the
//! effect. Only for the x86_64 Linux target, whose default linker is lld.
//!
//! It also tells `nexo --version` which commit and which profile it was
//! built from (`NEXO_GIT_COMMIT`, `NEXO_BUILD_PROFILE`): a bug report then
//! names the build exactly. Outside a git checkout the commit is `unknown`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    version_facts();
    symbol_ordering();
}

/// The commit (12 hex digits) and the profile, for `--version`.
fn version_facts() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&manifest)
            .args(args)
            .output()
            .ok()
            .filter(|output| output.status.success())
            .and_then(|output| String::from_utf8(output.stdout).ok())
            .map(|text| text.trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    // A new commit, or a checkout of another branch, builds anew.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let dir = Path::new(&dir);
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", dir.join(reference).display());
        }
        println!(
            "cargo:rerun-if-changed={}",
            dir.join("packed-refs").display()
        );
    }
    println!("cargo:rustc-env=NEXO_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=NEXO_BUILD_PROFILE={}", profile());
}

/// The profile's name: cargo's `PROFILE` says `release` for every
/// optimized profile (`dist` included), so it is read from the output
/// directory, `target/<profile>/build/nexo-*/out`.
fn profile() -> String {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    out.ancestors()
        .nth(3)
        .and_then(Path::file_name)
        .and_then(|name| name.to_str())
        .map(str::to_owned)
        .unwrap_or_else(|| std::env::var("PROFILE").unwrap_or_default())
}

/// The hot code laid out together, in optimized builds.
fn symbol_ordering() {
    println!("cargo:rerun-if-changed=link/hot-symbols.txt");
    println!("cargo:rerun-if-env-changed=NEXO_NO_SYMBOL_ORDERING");
    let release = std::env::var("PROFILE").is_ok_and(|profile| profile == "release");
    let lld_target = std::env::var("TARGET").is_ok_and(|t| t == "x86_64-unknown-linux-gnu");
    let opted_out = std::env::var_os("NEXO_NO_SYMBOL_ORDERING").is_some();
    let ordering =
        std::path::Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default())
            .join("link/hot-symbols.txt");
    if release && lld_target && !opted_out && ordering.exists() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            ordering.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
