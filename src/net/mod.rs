//! The socket side: listeners (TCP, unix), the connection loop, the post-activity spin and shutdown.
//!
//! Everything here moves bytes between sockets and the server's state in
//! `crate::server`; no command logic lives here.

pub mod conn;
pub mod listener;
pub mod load_signal;
pub mod port_file;
pub mod shutdown;
pub mod spin;
