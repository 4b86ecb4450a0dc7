fn main() {
    std::process::exit(ptefs::cli::main());
}
