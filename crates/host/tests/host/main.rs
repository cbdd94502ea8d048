//! nexo-host's tests against real sockets on 127.0.0.1: the providers'
//! wire clients against the scripted provider (`nexo-scripted-llm`).

mod provider;
