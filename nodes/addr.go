package nodes

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Limits of a node address, from RFC 1123 section 2.1 (which defers to RFC 1035 section 2.3.4).
const (
	maxHostName = 253 // bytes of a host name, without a trailing dot
	maxLabel    = 63  // bytes of one dot-separated label
	// maxAddr bounds a whole address: the longest name, or a bracketed IPv6 address with a
	// zone, plus ":65535". Longer input is refused before it is parsed or quoted in an error.
	maxAddr = maxHostName + len(":65535") + 2
)

// Canonical returns addr in the one spelling lbd uses to tell nodes apart, so that one proxy is
// one node however a source spells it: surrounding space trimmed; a host name in lower case
// ("H.example:02883" → "h.example:2883"); an IP address in the form of net/netip, with IPv4
// addresses plain ("[::ffff:10.0.0.1]:1" → "10.0.0.1:1") and IPv6 addresses compressed and
// bracketed ("[0:0:0:0:0:0:0:1]:1" → "[::1]:1"); the port in plain decimal. It fails as
// CheckAddr does.
func Canonical(addr string) (string, error) {
	return canonical(strings.TrimSpace(addr))
}

// CheckAddr is the one rule for a node address, "host:port", used by every source and by the
// DSN parser. The port is a decimal number from 1 to 65535. The host is either an IP address
// (IPv6 in brackets, "[fd00::1]:2883", optionally with a zone of letters, digits, '.', '-' and
// '_') or a host name as RFC 1123 allows it: dot-separated labels of ASCII letters, digits and
// hyphens, each 1 to 63 bytes and neither starting nor ending with a hyphen, at most 253 bytes
// in all, the last label not all digits (a name such as "010.0.0.1" or "167772161" that looks
// like an IPv4 address but is not one in dotted-decimal form is refused, since resolvers read
// such spellings differently). A trailing dot is refused rather than stripped: write the name
// without it. Names in other scripts must be written in their ASCII (punycode "xn--") form.
func CheckAddr(addr string) error {
	_, err := canonical(addr)
	return err
}

func canonical(addr string) (string, error) {
	if addr == "" {
		return "", errors.New("nodes: empty address")
	}
	if len(addr) > maxAddr {
		return "", fmt.Errorf("nodes: address %s is %d bytes long, longer than any host:port (%d bytes)", quote(addr), len(addr), maxAddr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("nodes: %s is not host:port (IPv6 needs [addr]:port): %s", quote(addr), splitReason(err))
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strings.TrimLeft(port, "0123456789") != "" {
		return "", fmt.Errorf("nodes: %s has port %s, want a number from 1 to 65535", quote(addr), quote(port))
	}
	if host == "" {
		return "", fmt.Errorf("nodes: %s has no host", quote(addr))
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := checkZone(ip.Zone()); err != nil {
			return "", fmt.Errorf("nodes: %s: %v", quote(addr), err)
		}
		return net.JoinHostPort(ip.Unmap().String(), strconv.Itoa(n)), nil
	}
	if strings.HasPrefix(addr, "[") {
		return "", fmt.Errorf("nodes: %s: brackets hold an IPv6 address, and %s is not one", quote(addr), quote(host))
	}
	if err := checkHostName(host); err != nil {
		return "", fmt.Errorf("nodes: %s: %v", quote(addr), err)
	}
	return net.JoinHostPort(strings.ToLower(host), strconv.Itoa(n)), nil
}

// checkHostName applies RFC 1123's rule for host names (see CheckAddr).
func checkHostName(h string) error {
	if strings.HasSuffix(h, ".") && len(h) > 1 {
		return fmt.Errorf("host %s ends with a dot: write the name without it", quote(h))
	}
	if len(h) > maxHostName {
		return fmt.Errorf("host name is %d bytes long, more than %d", len(h), maxHostName)
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		switch {
		case l == "":
			return fmt.Errorf("host %s has an empty label (a leading dot or two dots in a row)", quote(h))
		case len(l) > maxLabel:
			return fmt.Errorf("host %s has a label of %d bytes, more than %d", quote(h), len(l), maxLabel)
		case l[0] == '-' || l[len(l)-1] == '-':
			return fmt.Errorf("host %s has a label that starts or ends with a hyphen", quote(h))
		}
		for i := 0; i < len(l); i++ {
			if c := l[i]; !isLetterDigit(c) && c != '-' {
				return fmt.Errorf("host %s has the character %q: a host name holds only ASCII letters, digits, hyphens and dots, "+
					"or it is an IP address (IPv6 in brackets)", quote(h), rune(c))
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return fmt.Errorf("host %s is not an IP address in dotted-decimal form (four numbers from 0 to 255, no leading zeros) "+
			"nor a host name (its last label is all digits)", quote(h))
	}
	return nil
}

// checkZone accepts an IPv6 zone (an interface name or number) made of letters, digits, '.',
// '-' and '_'.
func checkZone(z string) error {
	for i := 0; i < len(z); i++ {
		if c := z[i]; !isLetterDigit(c) && !strings.ContainsRune(".-_", rune(c)) {
			return fmt.Errorf("IPv6 zone %s has the character %q, want letters, digits, '.', '-' or '_'", quote(z), rune(c))
		}
	}
	return nil
}

func isLetterDigit(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// splitReason is why net.SplitHostPort refused an address, without the address itself, which
// its error carries unquoted (a terminal escape in it would reach whoever prints the error).
func splitReason(err error) string {
	if ae, ok := errors.AsType[*net.AddrError](err); ok {
		return ae.Err
	}
	return "not host:port"
}

// quote quotes text from a peer for an error message, cut to a readable length.
func quote(s string) string {
	const n = 80
	if len(s) > n {
		return strconv.Quote(s[:n]) + "..."
	}
	return strconv.Quote(s)
}

// checkDistinct reports the first address of list that Canonical refuses, or that names the
// same node as an earlier entry once both are in canonical form ("LOCALHOST:1" and
// "localhost:1", "[::1]:1" and "[0:0:0:0:0:0:0:1]:1"). Its errors lack the "nodes: " prefix,
// for callers that add their own context.
func checkDistinct(list []string) error {
	seen := make(map[string]string, len(list))
	for _, a := range list {
		c, err := Canonical(a)
		if err != nil {
			return errors.New(strings.TrimPrefix(err.Error(), "nodes: "))
		}
		if first, dup := seen[c]; dup {
			if first == a {
				return fmt.Errorf("%s is listed twice", quote(a))
			}
			return fmt.Errorf("%s is listed twice (also as %s, the same node)", quote(a), quote(first))
		}
		seen[c] = a
	}
	return nil
}
