; Go's doc comments are plain `//` lines, as are the comments inside a
; body: there is no telling one written in the wrong place.
