package configserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"strings"
)

// The Java server's 403 messages.
const (
	msgMissingKey = "missing api key"
	msgIllegalKey = "illegal api key"
)

// bearerKey takes the API key out of an Authorization header value. The scheme must be
// "Bearer" (in any case, as HTTP schemes are) followed by white space and the key. It returns
// msg = msgMissingKey for an absent or blank header or an empty key, msgIllegalKey for another
// scheme, and "" with the key otherwise.
func bearerKey(header string) (key, msg string) {
	header = strings.TrimSpace(header)
	if header == "" {
		return "", msgMissingKey
	}
	scheme, rest, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", msgIllegalKey
	}
	key = strings.TrimSpace(rest)
	if key == "" {
		return "", msgMissingKey
	}
	return key, ""
}

// authorize checks an Authorization header against the schema's API keys and returns "" when
// it carries one of them, else the 403 message. The key is compared with every configured key
// through its SHA-256 sum, so neither the position of the first differing byte nor the key's
// length shows in the time taken.
func (ss *schemaState) authorize(header string) string {
	key, msg := bearerKey(header)
	if msg != "" {
		return msg
	}
	sum := sha256.Sum256([]byte(key))
	match := 0
	for i := range ss.keySums {
		match |= subtle.ConstantTimeCompare(sum[:], ss.keySums[i][:])
	}
	if match != 1 {
		return msgIllegalKey
	}
	return ""
}
