package shop

func Clamp(x, lo, hi int) int {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

// Mean is the integer average of xs.
func Mean(xs []int) int {
	total := 0
	for _, x := range xs {
		total += x
	}
	return total / len(xs)
}
