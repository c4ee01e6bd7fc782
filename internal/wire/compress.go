package wire

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
)

// The compressed protocol (MySQL "Client/Server Protocol", Compression): once the login
// succeeded with CLIENT_COMPRESS, both directions carry compressed packets, each a 7-byte
// header (compressed length, 3 bytes little-endian; sequence number; uncompressed length, 3
// bytes, 0 when the payload is stored as is) and a zlib stream or the stored bytes. Their
// payloads, joined, are the plain packet stream.

// minCompress is the payload below which a packet is stored rather than compressed, as MySQL's
// MIN_COMPRESS_LENGTH.
const minCompress = 50

// zLevel is the zlib level of what Write compresses: go-sql-driver's, which favours speed.
const zLevel = 2

// keepOut bounds the write buffer a Compression keeps between writes; a larger one (a long
// statement) is let go.
const keepOut = 1 << 20

// zHeader is the length of a compressed packet's header.
const zHeader = 7

// Compression frames a plain packet stream as compressed packets over conn, in both
// directions. Read and Write must each be called from one goroutine at a time (a MySQL
// connection is used by one at a time). Nothing it allocates is sized by the peer: a packet is
// inflated as it is read, straight into the caller's buffer.
//
// The sequence number is shared by both directions, as clients and servers count it: Write
// uses it and counts on, Read sets it to one past the number of the packet read. ResetSeq
// starts a new command.
type Compression struct {
	conn io.ReadWriter
	in   *bufio.Reader // conn's bytes
	seq  byte
	err  error // sticky: a broken read leaves the stream out of step

	// Reading: the current packet.
	tr   recorder         // conn, remembering its last error
	src  io.LimitedReader // the current packet's compressed (or stored) bytes still on tr
	br   *bufio.Reader    // over src, for zlib
	zr   io.ReadCloser    // zlib over br; reused
	ulen int              // the uncompressed length the header declared (0: stored)
	left int              // plain bytes of the packet still to come
	zip  bool             // the packet is compressed (not stored)

	// Writing.
	out bytes.Buffer
	zw  *zlib.Writer
}

// readBuffer is how much a Compression reads from its connection at once: a server sends an
// answer as several compressed packets, which one read takes in together.
const readBuffer = 16 << 10

// NewCompression frames the packets read from and written to conn. It reads conn through a
// buffer of its own (readBuffer bytes).
func NewCompression(conn io.ReadWriter) *Compression {
	c := &Compression{conn: conn}
	c.in = bufio.NewReaderSize(conn, readBuffer)
	c.tr.r = c.in
	c.src.R = &c.tr
	return c
}

// ResetSeq numbers the next packet written 0: the client starts a command.
func (c *Compression) ResetSeq() { c.seq = 0 }

// Seq returns the number the next packet written takes.
func (c *Compression) Seq() byte { return c.seq }

// Read reads plain bytes. A packet that is empty, whose zlib stream is malformed, fails its
// checksum, inflates to more or fewer bytes than its header declares, or leaves bytes after its
// stream, fails the read with an error wrapping ErrViolation; inflating stops at the declared
// length, so no packet costs more than the 16 MiB - 1 its header can declare. Every error is
// final.
func (c *Compression) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for c.left == 0 {
		if err := c.next(); err != nil {
			c.err = err
			return 0, err
		}
	}
	p = p[:min(len(p), c.left)]
	var n int
	var err error
	if c.zip {
		n, err = c.zr.Read(p)
	} else {
		n, err = c.src.Read(p)
	}
	c.left -= n
	switch {
	case c.left == 0:
		err = c.finish()
	case err == io.EOF && c.zip: // the zlib stream ended, checksum and all
		err = c.violation("a compressed packet inflates to %d bytes, fewer than the %d its header declares", c.ulen-c.left, c.ulen)
	case err == io.EOF:
		err = c.blame(io.ErrUnexpectedEOF, "")
	case err != nil:
		err = c.blame(err, "the compressed packet of %d bytes", c.ulen)
	}
	if err != nil {
		c.err = err
		return 0, err
	}
	return n, nil
}

// next reads the next packet's header and sets up for its payload.
func (c *Compression) next() error {
	var h [zHeader]byte
	if _, err := io.ReadFull(c.in, h[:]); err != nil {
		return err
	}
	clen := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	c.ulen = int(h[4]) | int(h[5])<<8 | int(h[6])<<16
	c.seq = h[3] + 1
	if clen == 0 {
		return c.violation("empty compressed packet")
	}
	c.src.N = int64(clen)
	c.tr.err = nil
	if c.ulen == 0 { // stored
		c.zip, c.left = false, clen
		return nil
	}
	c.zip, c.left = true, c.ulen
	if c.br == nil {
		c.br = bufio.NewReaderSize(&c.src, 4096)
	} else {
		c.br.Reset(&c.src)
	}
	var err error
	if c.zr == nil {
		c.zr, err = zlib.NewReader(c.br)
	} else {
		err = c.zr.(zlib.Resetter).Reset(c.br, nil)
	}
	if err != nil {
		return c.blame(err, "the compressed packet's zlib header")
	}
	return nil
}

// finish checks that a packet whose declared bytes were all read ends there: its zlib stream
// ends (the checksum checked), and no byte of the packet is left.
func (c *Compression) finish() error {
	if c.zip {
		var one [1]byte
		n, err := io.ReadFull(c.zr, one[:]) // io.EOF once the stream ended; empty blocks are skipped
		switch {
		case n > 0:
			return c.violation("a compressed packet inflates to more than the %d bytes its header declares", c.ulen)
		case err != io.EOF:
			return c.blame(err, "the end of a compressed packet's zlib stream")
		}
		if left := c.src.N + int64(c.br.Buffered()); left > 0 {
			return c.violation("%d bytes follow the zlib stream of a compressed packet", left)
		}
		return nil
	}
	return nil
}

// blame returns a transport error as it is (the connection broke, timed out) and anything else
// as the peer's violation: the packet's own bytes were there and did not make sense.
func (c *Compression) blame(err error, what string, args ...any) error {
	if c.tr.err != nil && c.tr.err != io.EOF {
		return c.tr.err
	}
	if c.tr.err == io.EOF && c.src.N > 0 {
		return io.ErrUnexpectedEOF // the connection ended inside the packet
	}
	return c.violation(what+": %v", append(args, err)...)
}

func (c *Compression) violation(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrViolation}, args...)...)
}

// recorder keeps the last error of the reads beneath a zlib stream, so that a transport error
// is told apart from a malformed stream.
type recorder struct {
	r   io.Reader
	err error
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil {
		r.err = err
	}
	return n, err
}

// Write frames p (plain packets) as compressed packets of at most MaxFragment bytes of payload
// each, compressing those of minCompress bytes or more when that makes them smaller, and
// writes them to conn. It returns len(p) when all of it went out.
func (c *Compression) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	done := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), MaxFragment)]
		c.out.Reset()
		c.out.Write(make([]byte, zHeader))
		ulen := 0
		if len(chunk) >= minCompress {
			if c.zw == nil {
				c.zw, _ = zlib.NewWriterLevel(&c.out, zLevel) // only an invalid level errs
			} else {
				c.zw.Reset(&c.out)
			}
			c.zw.Write(chunk) // a bytes.Buffer takes everything
			c.zw.Close()
			ulen = len(chunk)
			if c.out.Len()-zHeader >= len(chunk) {
				c.out.Truncate(zHeader)
				ulen = 0
			}
		}
		if ulen == 0 {
			c.out.Write(chunk)
		}
		b := c.out.Bytes()
		clen := len(b) - zHeader
		b[0], b[1], b[2] = byte(clen), byte(clen>>8), byte(clen>>16)
		b[3] = c.seq
		b[4], b[5], b[6] = byte(ulen), byte(ulen>>8), byte(ulen>>16)
		c.seq++
		_, err := c.conn.Write(b)
		if c.out.Cap() > keepOut {
			c.out = bytes.Buffer{}
		}
		if err != nil {
			return done, err
		}
		done += len(chunk)
		p = p[len(chunk):]
	}
	return done, nil
}

// SeqWalker finds the packet headers in a stream of plain packets, however it is split into
// calls, and offers each sequence number for reading or changing. The zero value starts at a
// packet's first byte.
type SeqWalker struct {
	hdr    [3]byte
	hdrN   int // header bytes seen of the current packet
	remain int // payload bytes of the current packet still to come
}

// Walk calls fn with each sequence number in b, in order.
func (w *SeqWalker) Walk(b []byte, fn func(seq *byte)) {
	for len(b) > 0 {
		if w.remain > 0 {
			n := min(w.remain, len(b))
			w.remain -= n
			b = b[n:]
			continue
		}
		if w.hdrN < 3 {
			w.hdr[w.hdrN] = b[0]
			w.hdrN++
			b = b[1:]
			continue
		}
		fn(&b[0])
		b = b[1:]
		w.hdrN = 0
		w.remain = int(w.hdr[0]) | int(w.hdr[1])<<8 | int(w.hdr[2])<<16
	}
}
