pub mod mathx;
pub mod stack;
pub mod text;
