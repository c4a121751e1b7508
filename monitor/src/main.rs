fn main() {
    std::process::exit(monitor::cli::main());
}
