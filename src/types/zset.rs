//! Sorted-set values. (Owned by the sorted-sets family; a placeholder until its index lands.)

#[derive(Clone, Debug, Default)]
pub struct ZSet {
    pub entries: Vec<(f64, Vec<u8>)>,
}

impl ZSet {
    pub fn encoding(&self) -> &'static str {
        "skiplist"
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
