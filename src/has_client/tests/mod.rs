mod config;
mod fetch;
mod server;
mod session;
