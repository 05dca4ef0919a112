//! placeholder
use super::lua::State;
pub unsafe fn open(_l: State) {}
