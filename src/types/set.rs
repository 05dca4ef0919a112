//! Set values. (Owned by the sets family; a plain dict until intset/listpack land.)

use crate::db::dict::Dict;

#[derive(Default)]
pub struct Set {
    pub members: Dict<()>,
}

impl Clone for Set {
    fn clone(&self) -> Self {
        let mut members = Dict::new();
        for (k, _) in self.members.iter() {
            members.insert(k, ());
        }
        Set { members }
    }
}

impl Set {
    pub fn encoding(&self) -> &'static str {
        "hashtable"
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}
