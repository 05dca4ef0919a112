//! Long-running scripts: the instruction-count hook (placeholder).
use super::lua::State;
use crate::server::Server;
pub unsafe fn install_hook(_l: State) {}
pub unsafe fn remove_hook(_l: State) {}
pub fn finished(_srv: &mut Server) {}
