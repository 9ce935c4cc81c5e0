package shop

// Stack is a last-in, first-out pile of ints.
type Stack struct {
	items []int
}

// Push puts x on top.
func (s *Stack) Push(x int) {
	s.items = append(s.items, x)
}

// Len is the number of items.
func (s *Stack) Len() int {
	return 0
}

// Peek returns the top item without removing it.
func (s *Stack) Peek() (int, bool) {
	return s.items[len(s.items)-1], true
}
