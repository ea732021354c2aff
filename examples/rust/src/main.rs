//! `seamspec-rust-impl`: the shell-output observer of this crate behind seamspec's wire
//! protocol. Start it with `seamspec run --impl-cmd PATH/TO/seamspec-rust-impl`.

mod alive;
mod driver;
mod wire;

fn main() {
    // Observer panics are part of the scenarios (a scripted observer "raises"); they are
    // contained by the library. Keep each to one line on stderr, never stdout.
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        let payload = info.payload();
        let text = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        eprintln!(
            "seamspec-rust-impl: panic on thread {:?}: {text}",
            thread.name().unwrap_or("unnamed")
        );
    }));
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let code = wire::serve(&mut stdin.lock(), &mut stdout.lock());
    std::process::exit(code);
}
