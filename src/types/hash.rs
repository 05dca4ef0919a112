//! Hash values. (Owned by the hashes family; a plain dict until its compact encoding lands.)

use crate::db::dict::Dict;

#[derive(Default)]
pub struct Hash {
    pub fields: Dict<Vec<u8>>,
}

impl Clone for Hash {
    fn clone(&self) -> Self {
        let mut fields = Dict::new();
        for (k, v) in self.fields.iter() {
            fields.insert(k, v.clone());
        }
        Hash { fields }
    }
}

impl Hash {
    pub fn encoding(&self) -> &'static str {
        "hashtable"
    }

    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}
