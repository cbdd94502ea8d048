//! Optimized builds (the `release` and `dist` profiles, which cargo both
//! reports as `release`) lay out the binary's code so that what serving a
//! tool call runs sits together: `link/hot-symbols.txt` (written by
//! `scripts/hot-symbols`) lists those functions, and lld places them first.
//! Scattered, the hot code pulls most of the text into memory a page cluster
//! at a time; together, it costs a few megabytes less of idle RSS. Names the
//! current build no longer has are skipped, so a stale list only weakens the
//! effect. Only for the x86_64 Linux target, whose default linker is lld.

fn main() {
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
