//! Optimized builds (the `release` and `dist` profiles, which cargo both
//! reports as `release`) lay out the binary's code so that what starting a
//! server and serving a tool call runs sits together:
//! `link/hot-symbols-<profile>.txt` (written by `scripts/hot-symbols
//! <profile>`) lists those functions, and lld places them first. Scattered,
//! the code that runs pulls most of the text into memory a page cluster at
//! a time; together, it costs a few megabytes less of idle RSS. A symbol's
//! name carries a hash of its crate's profile settings, so each profile has
//! its own list; names the current build no longer has are skipped, so a
//! stale list only weakens the effect. Only for the x86_64 Linux target,
//! whose default linker is lld.
//!
//! `release` strips its symbols here, at the link (`--strip-all`), rather
//! than with the profile's `strip`: stripping is part of the profile's
//! settings, so a build with symbols for `scripts/hot-symbols` to read
//! (`NEXO_KEEP_SYMBOLS=1`) would otherwise name every function differently
//! from the build it lays out. Both optimized profiles also pack their
//! relative relocations ([`packed_relocations`]) and fold identical
//! functions ([`identical_code_folding`]).
//!
//! It also tells `nexo --version` which commit and which profile it was
//! built from (`NEXO_GIT_COMMIT`, `NEXO_BUILD_PROFILE`): a bug report then
//! names the build exactly. Outside a git checkout the commit is `unknown`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    version_facts();
    symbol_ordering();
    symbol_stripping();
    packed_relocations();
    identical_code_folding();
}

/// Whether this is an optimized build (`release`, `dist`) for x86_64 Linux.
fn optimized_for_lld() -> bool {
    let optimized = std::env::var("PROFILE").is_ok_and(|profile| profile == "release");
    let lld_target = std::env::var("TARGET").is_ok_and(|t| t == "x86_64-unknown-linux-gnu");
    optimized && lld_target
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
    println!("cargo:rerun-if-env-changed=NEXO_NO_SYMBOL_ORDERING");
    let list = format!("link/hot-symbols-{}.txt", profile());
    println!("cargo:rerun-if-changed={list}");
    let opted_out = std::env::var_os("NEXO_NO_SYMBOL_ORDERING").is_some();
    let ordering =
        Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default()).join(list);
    if optimized_for_lld() && !opted_out && ordering.exists() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            ordering.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// `release`'s symbols stripped by the linker, unless `NEXO_KEEP_SYMBOLS`
/// is set (`scripts/hot-symbols release`). `dist` keeps them, for the
/// profilers `scripts/bench` and `scripts/instructions` run.
fn symbol_stripping() {
    println!("cargo:rerun-if-env-changed=NEXO_KEEP_SYMBOLS");
    let kept = std::env::var_os("NEXO_KEEP_SYMBOLS").is_some();
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if linux && profile() == "release" && !kept {
        println!("cargo:rustc-link-arg-bins=-Wl,--strip-all");
    }
}

/// Identical functions kept once (`--icf=all`), in optimized builds: without
/// LTO across crates, each crate holds its own copy of the generic code it
/// instantiates (drop glue above all: 45,000 `drop_in_place` bodies), and
/// many copies are the same machine code. 1.7 MB less of `release`. Only
/// code is folded, not data (lld folds read-only data only when told to
/// ignore its addresses), and Rust promises no distinct address to a
/// function: rustc's own function merging does the same within a crate.
fn identical_code_folding() {
    if optimized_for_lld() {
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
    }
}

/// Relative relocations packed (RELR, `-z pack-relative-relocs`), in
/// optimized builds: a position-independent Rust binary holds hundreds of
/// thousands of them (every vtable and string slice in read-only data),
/// 2.7 MB of `.rela.dyn` that the loader reads whole at every start, so it
/// stayed in an idle server's RSS; packed, they take a few kilobytes. The
/// loader must understand them (glibc 2.36 or newer), so the flag is given
/// only when the glibc this build runs on, which is the one the binary is
/// built for, is that recent (`getconf GNU_LIBC_VERSION`).
fn packed_relocations() {
    let native = std::env::var("HOST").ok() == std::env::var("TARGET").ok();
    if optimized_for_lld() && native && glibc_understands_relr() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether this machine's glibc is 2.36 or newer (`glibc 2.36`).
fn glibc_understands_relr() -> bool {
    let Ok(output) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version
        .split('.')
        .map(|part| part.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= (2, 36)
}
