package shop

import "strings"

// Title upper-cases the first letter of each word.
func Title(s string) string {
	words := strings.Fields(s)
	if len(words) > 0 {
		words[0] = strings.ToUpper(words[0][:1]) + words[0][1:]
	}
	return strings.Join(words, " ")
}

// Contains reports whether sub is in s.
func Contains(s, sub string) bool {
	return strings.Contains(s, sub)
}
