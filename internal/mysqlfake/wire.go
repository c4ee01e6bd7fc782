package mysqlfake

import (
	"crypto/sha1"
	"encoding/binary"
)

// Command bytes of the MySQL client/server protocol ("Text Protocol" and "Prepared
// Statements" pages of the MySQL Client/Server Protocol documentation).
const (
	ComQuit        byte = 0x01
	ComInitDB      byte = 0x02
	ComQuery       byte = 0x03
	ComPing        byte = 0x0e
	ComStmtPrepare byte = 0x16
	ComStmtExecute byte = 0x17
	ComStmtClose   byte = 0x19
	ComStmtReset   byte = 0x1a
)

// Capability flags the fake announces in its greeting (protocol "Capabilities Flags").
const (
	ClientLongPassword     uint32 = 1 << 0
	ClientFoundRows        uint32 = 1 << 1
	ClientLongFlag         uint32 = 1 << 2
	ClientConnectWithDB    uint32 = 1 << 3
	ClientCompress         uint32 = 1 << 5
	ClientProtocol41       uint32 = 1 << 9
	ClientSSL              uint32 = 1 << 11
	ClientTransactions     uint32 = 1 << 13
	ClientSecureConnection uint32 = 1 << 15
	ClientMultiStatements  uint32 = 1 << 16
	ClientMultiResults     uint32 = 1 << 17
	ClientPluginAuth       uint32 = 1 << 19
	ClientConnectAttrs     uint32 = 1 << 20
	ClientPluginAuthLenenc uint32 = 1 << 21
	ClientSessionTrack     uint32 = 1 << 23
	ClientDeprecateEOF     uint32 = 1 << 24
)

// Column types used in the fake's column definitions.
const (
	typeLongLong  byte = 0x08
	typeVarString byte = 0xfd
)

// Packet frames payload as one protocol packet: a 3-byte little-endian length, the sequence
// number, then the payload. It does not split payloads of 16 MiB or more.
func Packet(seq byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

// Packets frames each payload in turn, numbering them from seq.
func Packets(seq byte, payloads ...[]byte) []byte {
	var out []byte
	for i, p := range payloads {
		out = append(out, Packet(seq+byte(i), p)...)
	}
	return out
}

// LenencInt appends n as a length-encoded integer.
func LenencInt(b []byte, n uint64) []byte {
	switch {
	case n < 251:
		return append(b, byte(n))
	case n < 1<<16:
		return append(b, 0xfc, byte(n), byte(n>>8))
	case n < 1<<24:
		return append(b, 0xfd, byte(n), byte(n>>8), byte(n>>16))
	}
	b = append(b, 0xfe)
	return binary.LittleEndian.AppendUint64(b, n)
}

// LenencString appends s as a length-encoded string.
func LenencString(b []byte, s string) []byte {
	return append(LenencInt(b, uint64(len(s))), s...)
}

// readLenencInt reads a length-encoded integer; ok is false when b is too short.
func readLenencInt(b []byte) (n uint64, size int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch b[0] {
	case 0xfc:
		size = 3
	case 0xfd:
		size = 4
	case 0xfe:
		size = 9
	default:
		return uint64(b[0]), 1, true
	}
	if len(b) < size {
		return 0, 0, false
	}
	var buf [8]byte
	copy(buf[:], b[1:size])
	return binary.LittleEndian.Uint64(buf[:]), size, true
}

// OKPayload is an OK packet's payload: no affected rows, no insert id, autocommit status.
func OKPayload() []byte { return []byte{0x00, 0, 0, 0x02, 0, 0, 0} }

// EOFPayload is a (pre-5.7.5) EOF packet's payload: no warnings, autocommit status.
func EOFPayload() []byte { return []byte{0xfe, 0, 0, 0x02, 0} }

// ErrPayload is an ERR packet's payload with the SQLSTATE marker.
func ErrPayload(number uint16, state, msg string) []byte {
	b := []byte{0xff, byte(number), byte(number >> 8), '#'}
	b = append(b, (state + "00000")[:5]...)
	return append(b, msg...)
}

// ColumnDef is the payload of a Protocol::ColumnDefinition41 for a column called name.
func ColumnDef(name string, typ byte) []byte {
	b, _ := columnDef(name, typ)
	return b
}

// ColumnDefCuts returns the offsets inside ColumnDef(name, typ) where each field ends, so a test
// can truncate a definition after every field.
func ColumnDefCuts(name string, typ byte) []int {
	_, cuts := columnDef(name, typ)
	return cuts
}

func columnDef(name string, typ byte) ([]byte, []int) {
	var b []byte
	var cuts []int
	for _, s := range []string{"def", "", "", "", name, name} { // catalog, schema, table, org_table, name, org_name
		b = LenencString(b, s)
		cuts = append(cuts, len(b))
	}
	b = append(b, 0x0c) // length of the fixed fields
	cuts = append(cuts, len(b))
	b = append(b, 33, 0) // character set utf8_general_ci
	cuts = append(cuts, len(b))
	b = append(b, 0xff, 0, 0, 0) // column length
	cuts = append(cuts, len(b))
	b = append(b, typ)
	cuts = append(cuts, len(b))
	b = append(b, 0, 0) // flags
	cuts = append(cuts, len(b))
	b = append(b, 0) // decimals
	cuts = append(cuts, len(b))
	b = append(b, 0, 0) // filler
	return b, cuts
}

// nativePassword is mysql_native_password's scramble: SHA1(pw) XOR SHA1(salt + SHA1(SHA1(pw))).
func nativePassword(salt []byte, password string) []byte {
	if password == "" {
		return nil
	}
	h1 := sha1.Sum([]byte(password))
	h2 := sha1.Sum(h1[:])
	h := sha1.New()
	h.Write(salt)
	h.Write(h2[:])
	out := h.Sum(nil)
	for i := range out {
		out[i] ^= h1[i]
	}
	return out
}
