//! The `lockstep` command's library: what the command and the integration
//! tests share (one launcher, two users).

pub mod bench;
pub mod cluster;
pub mod conformance;
pub mod options;
pub mod top;
pub mod workload;

/// A subcommand's arguments parsed by clap as `name ARGS...`; on an error
/// or `--help`, clap has printed it and the command exits with this code.
pub fn parse_args<T: clap::Parser>(name: &str, args: &[String]) -> Result<T, std::process::ExitCode> {
    T::try_parse_from(std::iter::once(name.to_string()).chain(args.iter().cloned())).map_err(|e| {
        let _ = e.print();
        if e.use_stderr() {
            std::process::ExitCode::from(2)
        } else {
            std::process::ExitCode::SUCCESS
        }
    })
}
