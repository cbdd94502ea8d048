//! The Morse server (seed 000's remote server). Placeholder until the handler lands.
