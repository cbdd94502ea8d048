//! The DNS handler driven through rmcp in-process (a `tokio::io::duplex`
//! pair and rmcp's own client) against real DNS servers on loopback
//! ([`bed`]): every test starts the servers it needs and stops them by
//! dropping its [`bed::Bed`]. Nothing reaches the internet.

mod bed;
mod tools;
