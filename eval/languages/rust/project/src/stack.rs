/// A last-in, first-out pile of ints.
#[derive(Debug, Default)]
pub struct Stack {
    items: Vec<i32>,
}

impl Stack {
    pub fn new() -> Self {
        Stack { items: Vec::new() }
    }

    pub fn push(&mut self, x: i32) {
        self.items.push(x);
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        0
    }
}
