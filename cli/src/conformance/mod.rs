//! conformance (work in progress)

pub mod cli {
    use std::process::ExitCode;
    pub fn main(_args: &[String]) -> ExitCode {
        eprintln!("not implemented yet");
        ExitCode::from(2)
    }
}
