//! Items gathered into batches bounded by their count and by the bytes
//! they hold: what the import passes between its threads and writes at
//! once, so large files never pile up in memory.

/// A batch being filled.
pub struct Batch<T> {
    items: Vec<T>,
    held: usize,
    max_items: usize,
    max_bytes: usize,
}

impl<T> Batch<T> {
    pub fn new(max_items: usize, max_bytes: usize) -> Self {
        Batch {
            items: Vec::new(),
            held: 0,
            max_items,
            max_bytes,
        }
    }

    /// Adds `item` of `bytes`; the whole batch once it is full.
    pub fn push(&mut self, item: T, bytes: usize) -> Option<Vec<T>> {
        self.items.push(item);
        self.held += bytes;
        (self.items.len() >= self.max_items || self.held >= self.max_bytes).then(|| self.take())
    }

    /// What the batch holds, leaving it empty.
    pub fn take(&mut self) -> Vec<T> {
        self.held = 0;
        std::mem::take(&mut self.items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_full_at_its_count_or_at_its_bytes_whichever_comes_first() {
        let mut small = Batch::new(3, 1 << 20);
        assert_eq!(small.push(1, 10), None);
        assert_eq!(small.push(2, 10), None);
        assert_eq!(small.push(3, 10), Some(vec![1, 2, 3]));
        assert_eq!(small.take(), Vec::<i32>::new());
        let mut large = Batch::new(256, 1 << 20);
        assert_eq!(large.push("a", 700 << 10), None);
        assert_eq!(large.push("b", 700 << 10), Some(vec!["a", "b"]));
        assert_eq!(large.push("c", 10), None, "the count of bytes starts again");
        assert_eq!(large.take(), vec!["c"]);
    }
}
