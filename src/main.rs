fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(elevator::cli::main_with_args(args));
}
