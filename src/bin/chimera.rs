//! The `chimera` command (see `chimera --help`).

fn main() {
    std::process::exit(chimera::cli::run(std::env::args()));
}
