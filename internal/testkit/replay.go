package testkit

import (
	"io"
	"net"
	"testing"
	"time"
)

// Replay starts a listener on 127.0.0.1:0 that answers every connection with packet and closes
// the connection once the client leaves, or after 2 s. It returns the listener's address and
// closes the listener when the test ends.
func Replay(t testing.TB, packet []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write(packet)
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().String()
}
