//! List values. (Owned by the lists family; a simple deque until its compact encoding lands.)

use std::collections::VecDeque;

#[derive(Clone, Debug, Default)]
pub struct List {
    pub items: VecDeque<Vec<u8>>,
}

impl List {
    pub fn encoding(&self) -> &'static str {
        "listpack"
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}
