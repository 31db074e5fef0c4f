//! mtr looks for garbd at `garb/garbd` beside the provider library
//! (`target/<profile>/`), and the contract names that path; cargo
//! puts binaries in `target/<profile>/` itself. The link makes
//! `target/<profile>/garb/garbd` the garbd this build makes. A build
//! script may not write outside OUT_DIR by the book; this one only adds
//! a link beside its own outputs, and a failure to make it fails nothing
//! (`lockstep conformance` makes the same link before it runs mtr).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let Some(out) = std::env::var_os("OUT_DIR") else { return };
    // OUT_DIR is target/<profile>/build/<crate>-<hash>/out.
    let Some(profile_dir) = std::path::Path::new(&out).ancestors().nth(3) else { return };
    let dir = profile_dir.join("garb");
    let link = dir.join("garbd");
    if link.symlink_metadata().is_ok() {
        return;
    }
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::os::unix::fs::symlink("../garbd", &link);
}
