//! Commands: the spec type, the argument cursor, the table and dispatch.

pub mod args;
pub mod dispatch;
pub mod gate;
pub mod meta;
pub mod names;
pub mod replicated;
pub mod spec;
pub mod table;

pub use args::{Args, Argv};
pub use spec::{flags, CommandSpec};
pub use table::CmdRef;
