//! The cluster command family.

use crate::command::CommandSpec;

pub static SPECS: &[CommandSpec] = &[];
