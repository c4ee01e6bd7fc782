package wire

// walker checks, as a packet's payload streams past, that it starts with want length-encoded
// strings (a NULL, 0xfb, counts as one) followed by at least tail more bytes. It keeps no copy
// of the payload: string contents are skipped by count.
type walker struct {
	active   bool
	want     int    // strings expected
	done     int    // strings complete
	tail     int    // fixed bytes required after the strings
	tailGot  int    // of those, seen so far
	lenNeed  int    // bytes of a length header still to come
	lenShift uint   // bit position of the next length byte
	lenVal   uint64 // the length being assembled
	skip     uint64 // string bytes still to skip
}

func (w *walker) start(want, tail int) {
	*w = walker{active: true, want: want, tail: tail}
}

// complete reports whether every string and the tail were seen.
func (w *walker) complete() bool {
	return w.done == w.want && w.skip == 0 && w.lenNeed == 0 && w.tailGot >= w.tail
}

func (w *walker) feed(p []byte) {
	for len(p) > 0 {
		switch {
		case w.skip > 0:
			n := uint64(len(p))
			if n > w.skip {
				n = w.skip
			}
			w.skip -= n
			p = p[n:]
			if w.skip == 0 {
				w.done++
			}
		case w.lenNeed > 0:
			w.lenVal |= uint64(p[0]) << w.lenShift
			w.lenShift += 8
			w.lenNeed--
			p = p[1:]
			if w.lenNeed == 0 {
				w.string(w.lenVal)
			}
		case w.done < w.want:
			b := p[0]
			p = p[1:]
			if b < 0xfb && int(b) <= len(p) { // the common case: a short value, whole in p
				p = p[b:]
				w.done++
				continue
			}
			switch b {
			case 0xfb: // NULL
				w.done++
			case 0xfc:
				w.lenHeader(2)
			case 0xfd:
				w.lenHeader(3)
			case 0xfe:
				w.lenHeader(8)
			default:
				w.string(uint64(b))
			}
		default: // strings complete: count the tail, ignore the rest
			if w.tailGot < w.tail {
				n := min(w.tail-w.tailGot, len(p))
				w.tailGot += n
			}
			return
		}
	}
}

func (w *walker) lenHeader(n int) { w.lenNeed, w.lenVal, w.lenShift = n, 0, 0 }

// string starts skipping a string of n bytes.
func (w *walker) string(n uint64) {
	if n == 0 {
		w.done++
		return
	}
	w.skip = n
}
