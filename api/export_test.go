package api

import (
	"fmt"
	"strings"
)

// JSONQuote is jsonQuote, for the api_test package's tests.
var JSONQuote = jsonQuote

// jsonQuote quotes s as a JSON string, escaping only what JSON requires:
// invalid UTF-8 goes out as it is, for the server to cope with.
func jsonQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
